/* lt_sort: declarations are added by the module that implements them. */
