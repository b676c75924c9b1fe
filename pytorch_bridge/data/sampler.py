"""Which records a rank gets in an epoch, in which batches.

The split's N records (packed order, 0-based) are cut into `world` contiguous ranges whose sizes differ
by at most one (`rank_range`).
  - policy "partition": rank r owns range r for good (its store holds only that range) and shuffles
    it locally each epoch (seed, epoch, rank);
  - policy "replicate": one global permutation per epoch (seed, epoch), dealt to the ranks in turn
    (rank r takes positions r, r + world, ...; Goyal et al.). Every host holds the whole split. Dealt
    this way, step k of all ranks together uses exactly positions [k*world*B, (k+1)*world*B) of the
    permutation: the batch a single process with the global batch world*B takes at step k, so N ranks
    compute the same gradient as one (tests/test_train.py checks it).
Either way every record is visited exactly once per epoch across ranks.

Batches: fb.resnet.torch keeps the last partial batch (size() = ceil(N / batchSize)). Synchronous SGD
also needs the same number of batches on every rank, so each rank gets L = ceil(ceil(N / world) / B)
batches: L - 1 full ones and a last one with what is left. A rank with one record fewer than the
largest can end up with nothing left for its last batch; then its batch L - 1 gives one record to it
(sizes ..., B - 1, 1), so no batch is empty unless B == 1 (or N < world). The last batches' sizes can
thus differ across ranks (by at most 1 record): weight by batch size when averaging (the trainer sums
correct counts and divides by the total for validation). drop_last=True instead gives every rank
floor(min_r N_r / B) full batches and skips the rest.
"""
import numpy as np

POLICIES = ("partition", "replicate")


def rank_range(n, world, rank):
    return n * rank // world, n * (rank + 1) // world


def num_batches(n, batch_size, world, drop_last=False):
    if drop_last:
        return (n // world) // batch_size
    return -(-(-(-n // world)) // batch_size)


def batch_sizes(count, n, batch_size, world, drop_last=False):
    """The sizes of this rank's batches when it holds `count` of the split's `n` records."""
    L = num_batches(n, batch_size, world, drop_last)
    if drop_last:
        return [batch_size] * L
    if L == 0:
        return []
    sizes = [batch_size] * (L - 1) + [count - (L - 1) * batch_size]
    if sizes[-1] == 0 and L >= 2 and batch_size >= 2:
        sizes[-2] -= 1
        sizes[-1] = 1
    return sizes


def epoch_order(n, rank, world, seed, epoch, policy="partition", shuffle=True):
    """This rank's records for the epoch, in visiting order (split-global 0-based indices)."""
    if policy not in POLICIES:
        raise ValueError("policy must be one of %s, not %r" % (", ".join(POLICIES), policy))
    if not 0 <= rank < world:
        raise ValueError("rank %d is not in a world of %d" % (rank, world))
    lo, hi = rank_range(n, world, rank)
    if policy == "partition":
        idx = np.arange(lo, hi, dtype=np.int64)
        if shuffle:
            idx = idx[np.random.default_rng([seed, epoch, rank, 1]).permutation(hi - lo)]
        return idx
    perm = np.random.default_rng([seed, epoch, 2]).permutation(n) if shuffle else np.arange(n, dtype=np.int64)
    return perm[rank::world].astype(np.int64)


def epoch_batches(n, batch_size, rank=0, world=1, seed=0, epoch=1, policy="partition", shuffle=True,
                  drop_last=False):
    order = epoch_order(n, rank, world, seed, epoch, policy, shuffle)
    out, pos = [], 0
    for s in batch_sizes(len(order), n, batch_size, world, drop_last):
        out.append(order[pos:pos + s])
        pos += s
    return out
