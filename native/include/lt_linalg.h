/* lt_linalg: declarations are added by the module that implements them. */
