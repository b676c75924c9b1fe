/* lt_random: Torch7's THRandom generator (Mersenne Twister MT19937) and the
 * tensor fills built on it.
 *
 * A generator is a plain struct owned by its caller (each LuaJIT state holds
 * its own default one: no C global is shared between threads). Its layout is
 * TH's THGenerator state on LP64 (unsigned long -> uint64_t, 5048 bytes), so
 * torch.getRNGState() bytes are a straight copy of it. */
typedef struct lt_generator {
  uint64_t the_initial_seed;
  int32_t left;              /* outputs left before the next twist (1..624) */
  int32_t seeded;
  uint64_t next;             /* index of the next state word */
  uint64_t state[624];       /* MT19937 words, each < 2^32 */
  double normal_x;           /* Box-Muller pair cached between normal() calls */
  double normal_y;
  double normal_rho;
  int32_t normal_is_valid;
  int32_t padding;
} lt_generator;

/* A blank (unseeded) generator, as THGenerator_new. */
void lt_gen_init(lt_generator *g);
/* init_genrand(seed & 0xffffffff); the full seed is kept for initialSeed(). */
void lt_gen_manual_seed(lt_generator *g, uint64_t seed);
/* Seed from /dev/urandom (the time if unreadable), masked to 53 bits so the
 * seed survives a round trip through a Lua number. Returns it. */
uint64_t lt_gen_seed(lt_generator *g);
uint64_t lt_gen_initial_seed(const lt_generator *g);
/* Whether a state (e.g. restored from bytes) is usable. */
int lt_gen_is_valid(const lt_generator *g);

/* Scalar draws (TH's THRandom_*). Functions with preconditions return -1
 * and set the error when they fail; results go to *out. */
uint32_t lt_gen_random(lt_generator *g);                       /* 32-bit tempered output */
double lt_gen_uniform(lt_generator *g, double a, double b);     /* random()/2^32 * (b-a) + a */
int lt_gen_normal(lt_generator *g, double mean, double stdv, double *out);
int lt_gen_exponential(lt_generator *g, double lambda, double *out);
double lt_gen_cauchy(lt_generator *g, double median, double sigma);
int lt_gen_log_normal(lt_generator *g, double mean, double stdv, double *out);
int lt_gen_geometric(lt_generator *g, double p, double *out);
int lt_gen_bernoulli(lt_generator *g, double p, double *out);
int lt_gen_random_range(lt_generator *g, int64_t a, int64_t b, double *out);  /* random() % (b+1-a) + a */

/* Tensor fills, element by element in row-major order (TH's order). */
int lt_tensor_random(lt_tensor *t, lt_generator *g);                   /* TH's per-type range */
int lt_tensor_random_range(lt_tensor *t, lt_generator *g, int64_t a, int64_t b);  /* [a, b] */
int lt_tensor_uniform(lt_tensor *t, lt_generator *g, double a, double b);
int lt_tensor_normal(lt_tensor *t, lt_generator *g, double mean, double stdv);
int lt_tensor_exponential(lt_tensor *t, lt_generator *g, double lambda);
int lt_tensor_cauchy(lt_tensor *t, lt_generator *g, double median, double sigma);
int lt_tensor_log_normal(lt_tensor *t, lt_generator *g, double mean, double stdv);
int lt_tensor_geometric(lt_tensor *t, lt_generator *g, double p);
int lt_tensor_bernoulli(lt_tensor *t, lt_generator *g, double p);
/* Each element ~ Bernoulli(p[i]); p is a Float or Double tensor with t's element count. */
int lt_tensor_bernoulli_tensor(lt_tensor *t, lt_generator *g, const lt_tensor *p);
/* r = a random permutation of 1..n (1-D, any type). */
int lt_tensor_randperm(lt_tensor *r, lt_generator *g, int64_t n);
/* r (LongTensor) = n 1-based category draws per row of prob (1-D or 2-D
 * Float/Double); without replacement a category is drawn at most once. */
int lt_tensor_multinomial(lt_tensor *r, lt_generator *g, const lt_tensor *prob, int64_t n, int replacement);
/* Walker's alias method. Setup: from probs (1-D Float/Double, nonnegative,
 * not all zero; normalized here), q (probs' type) gets each bin's acceptance
 * probability and J (LongTensor) its 1-based alias, both resized to
 * probs' size. Draw: every element of r (a LongTensor of any shape, filled in
 * row-major order through its strides) becomes a 1-based category: a uniform
 * bin k, kept with probability q[k], else J[k]. */
int lt_multinomial_alias_setup(const lt_tensor *probs, lt_tensor *J, lt_tensor *q);
int lt_multinomial_alias_draw(lt_tensor *r, lt_generator *g, const lt_tensor *J, const lt_tensor *q);
