/* lt_math: declarations are added by the module that implements them. */
