"""Independent numpy references for tests/unit/quant_scale_test.cpp: the threshold of TensorRT's
entropy calibration (after MXNet's _get_optimal_threshold, on a histogram of |x|) and of the MSE
search, on the histograms the test builds. Prints the bin indices the test expects."""
import numpy as np


def smooth(p, eps=1e-4):
    is_zeros = (p == 0).astype(np.float64)
    is_nonzeros = (p != 0).astype(np.float64)
    n_zeros, n_nonzeros = is_zeros.sum(), is_nonzeros.sum()
    if n_nonzeros == 0:
        return None
    eps1 = eps * n_zeros / n_nonzeros
    return p.astype(np.float64) + eps * is_zeros - eps1 * is_nonzeros


def kl(p, q):
    p = p / p.sum()
    q = q / q.sum()
    m = p > 0
    return float(np.sum(p[m] * np.log(p[m] / q[m])))


def entropy_index(hist, levels=128):
    best, best_kl = len(hist), np.inf
    for i in range(levels, len(hist) + 1):
        sliced = hist[:i].astype(np.float64)
        p = sliced.copy()
        p[i - 1] += hist[i:].sum()
        nonzero = (p != 0)
        q = np.zeros(i)
        m = i // levels
        for j in range(levels):
            start = j * m
            stop = i if j == levels - 1 else start + m
            norm = nonzero[start:stop].sum()
            if norm:
                q[start:stop] = np.where(nonzero[start:stop], sliced[start:stop].sum() / norm, 0)
        ps, qs = smooth(p), smooth(q)
        if ps is None or qs is None:
            continue
        d = kl(ps, qs)
        if d < best_kl:
            best, best_kl = i, d
    return best


def mse_index(hist, levels):
    used = np.nonzero(hist)[0].max() + 1
    centers = np.arange(used) + 0.5
    errs = []
    for i in range(1, used + 1):
        step = i / levels
        q = np.minimum(np.round(centers / step), levels) * step
        errs.append(np.sum(hist[:used] * (centers - q) ** 2))
    return int(np.argmin(errs)) + 1


def test_histogram():
    # 512 bins: an exponential body and two outliers (the test builds the same counts).
    i = np.arange(512)
    h = np.round(1000 * np.exp(-i / 40.0))
    h[400] += 3
    h[500] += 1
    return h


if __name__ == "__main__":
    h = test_histogram()
    print("entropy", entropy_index(h, 128))
    print("mse127", mse_index(h, 127))
    print("mse16", mse_index(h, 16))
