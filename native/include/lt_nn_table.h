/* nn kernels: table modules, shape modules, containers (Torch7's THNN counterparts). */
#ifndef LT_NN_TABLE_H
#define LT_NN_TABLE_H


#endif
