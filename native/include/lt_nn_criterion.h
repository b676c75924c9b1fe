/* nn kernels: the criterions (Torch7's THNN counterparts). */
#ifndef LT_NN_CRITERION_H
#define LT_NN_CRITERION_H

/* ---- element-wise criterions (nn_criterion_pointwise.c) ----
 * kind picks the element loss; weights (optional, BCE only, as many
 * elements as input) scale each term; param is the margin of Margin-
 * and HingeEmbeddingCriterion. */
enum {
  LT_CRIT_ABS = 1,
  LT_CRIT_SMOOTHL1 = 2,
  LT_CRIT_DISTKLDIV = 3,
  LT_CRIT_MARGIN = 4,
  LT_CRIT_SOFTMARGIN = 5,
  LT_CRIT_BCE = 6,
  LT_CRIT_L1COST = 7,     /* sum |x|; target is not read (pass input) */
  LT_CRIT_HINGE = 8,      /* HingeEmbeddingCriterion, param = margin */
  LT_CRIT_MSE = 9         /* (x - y)^2: cunn's MSECriterion on the GPU (nn's is tensor methods) */
};
/* *value (when not NULL): the loss as output holds it (rounded to its type), so that a caller need not read a
 * device output back */
int lt_nn_PointwiseCriterion_updateOutput(int kind, lt_tensor *input, lt_tensor *target, lt_tensor *output,
                                          int size_average, lt_tensor *weights, double param, double *value);
int lt_nn_PointwiseCriterion_updateGradInput(int kind, lt_tensor *input, lt_tensor *target, lt_tensor *gradInput,
                                             int size_average, lt_tensor *weights, double param);

/* ---- class-score criterions with 1-based LongTensor targets (nn_criterion_class.c) ---- */
/* *value (when not NULL) as in lt_nn_PointwiseCriterion_updateOutput */
int lt_nn_MultiMarginCriterion_updateOutput(lt_tensor *input, lt_tensor *target, lt_tensor *output,
                                            int size_average, int p, lt_tensor *weights, double margin,
                                            double *value);
int lt_nn_MultiMarginCriterion_updateGradInput(lt_tensor *input, lt_tensor *target, lt_tensor *gradInput,
                                               int size_average, int p, lt_tensor *weights, double margin);
/* target: input's shape, each frame's classes then 0; isTarget: filled by updateOutput */
int lt_nn_MultiLabelMarginCriterion_updateOutput(lt_tensor *input, lt_tensor *target, lt_tensor *output,
                                                 lt_tensor *isTarget, int size_average, double *value);
int lt_nn_MultiLabelMarginCriterion_updateGradInput(lt_tensor *input, lt_tensor *target, lt_tensor *gradInput,
                                                    lt_tensor *isTarget, int size_average);
/* input N x C x H x W, target N x H x W */
int lt_nn_SpatialClassNLLCriterion_updateOutput(lt_tensor *input, lt_tensor *target, lt_tensor *output,
                                                int size_average, lt_tensor *weights, lt_tensor *total_weight);
int lt_nn_SpatialClassNLLCriterion_updateGradInput(lt_tensor *input, lt_tensor *target, lt_tensor *gradInput,
                                                   int size_average, lt_tensor *weights, lt_tensor *total_weight);

#endif
