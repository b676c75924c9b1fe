/* nn kernels: the criterions (Torch7's THNN counterparts). */
#ifndef LT_NN_CRITERION_H
#define LT_NN_CRITERION_H


#endif
