"""luatorch's Python side: the LuaJIT runtime bridge and interop helpers.

    from pytorch_bridge import Runtime
    rt = Runtime()
    rt.execute("x = torch.randn(3, 4)")
"""
from pytorch_bridge.runtime import LuaError, Runtime, lua_dir

__all__ = ["Runtime", "LuaError", "lua_dir"]
