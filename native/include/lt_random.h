/* lt_random: declarations are added by the module that implements them. */
