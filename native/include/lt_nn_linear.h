/* nn kernels: simple parametric layers, lookup, misc (Torch7's THNN counterparts). */
#ifndef LT_NN_LINEAR_H
#define LT_NN_LINEAR_H


#endif
