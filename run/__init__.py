"""luatorch's command line: `luatorch th`, `luatorch bench ...`, `luatorch demo`."""
