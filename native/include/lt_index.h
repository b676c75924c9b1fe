/* lt_index: declarations are added by the module that implements them. */
