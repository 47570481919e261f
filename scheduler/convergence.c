/* convergence: fit of l(k) = 1/(b0*k + b1) + b2 with b0, b1, b2 >= 0.
 *
 * For a fixed asymptote b2 below every observed loss, 1/(l - b2) = b0*k + b1 is linear in
 * (b0, b1), so the inner problem is a two-column NNLS, solved exactly in closed form
 * (weighted, centred least squares; if that leaves the orthant, the better of the two
 * one-variable faces), which keeps a refit of 256 points near a tenth of a millisecond.
 * Each row is weighted by (l_i - b2)^2, the derivative of l with respect to 1/(l - b2),
 * so that the linear residual approximates the residual in loss space, which is what we
 * minimise:
 *
 *     SSE(b2) = sum_i (1/(b0*k_i + b1) + b2 - l_i)^2.
 *
 * Each candidate b2 gets the linearised fit and one projected Gauss-Newton step on
 * (b0, b1) (again a weighted two-column NNLS) toward the exact loss-space optimum. The
 * outer search over b2 in [0, min l) scans a grid that is dense near min l (where the
 * curve's shape changes fastest), then narrows the best bracket by golden section; a
 * few more Gauss-Newton steps finish (b0, b1) at the chosen b2. */
#include "convergence.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CONV_GRID 16         /* b2 candidates of the coarse scan */
#define CONV_GOLDEN_ITERS 24 /* golden-section steps: bracket shrinks by 0.618^24 ~ 1e-5 */
#define CONV_GN_ITERS 3      /* Gauss-Newton refinements at the final b2 */

struct conv_data {
    const double *k, *l;
    size_t n;
    double kscale; /* largest step, to keep the NNLS columns of similar size */
    double *wt;    /* n row weights (squared row scales) */
    double *y;     /* n targets */
};

struct conv_params {
    double b0, b1, b2, sse;
};

static double predict(double b0, double b1, double b2, double k)
{
    double u = b0 * k + b1;
    return u > 0.0 ? 1.0 / u + b2 : INFINITY;
}

static double sse_of(const struct conv_data *d, const struct conv_params *p)
{
    double s = 0.0;
    for (size_t i = 0; i < d->n; i++) {
        double e = predict(p->b0, p->b1, p->b2, d->k[i]) - d->l[i];
        s += e * e;
    }
    return isfinite(s) ? s : INFINITY;
}

/* Exact NNLS of min sum wt_i (b0*k_i + b1 - y_i)^2 over b0, b1 >= 0 (k scaled by
 * kscale inside, for conditioning). With two variables the answer is the unconstrained
 * one if it is feasible, else the better of the faces b1 = 0 and b0 = 0. */
static void solve_rows(const struct conv_data *d, struct conv_params *p)
{
    double sw = 0.0, sk = 0.0, sy = 0.0;
    for (size_t i = 0; i < d->n; i++) {
        double k = d->k[i] / d->kscale;
        sw += d->wt[i];
        sk += d->wt[i] * k;
        sy += d->wt[i] * d->y[i];
    }
    double kbar = sk / sw, ybar = sy / sw, skk = 0.0, sky = 0.0, sk2 = 0.0, sk2y = 0.0;
    for (size_t i = 0; i < d->n; i++) {
        double k = d->k[i] / d->kscale, dk = k - kbar;
        skk += d->wt[i] * dk * dk;
        sky += d->wt[i] * dk * (d->y[i] - ybar);
        sk2 += d->wt[i] * k * k;
        sk2y += d->wt[i] * k * d->y[i];
    }
    double b0 = skk > 0.0 ? sky / skk : 0.0, b1 = ybar - b0 * kbar;
    if (!(b0 >= 0.0 && b1 >= 0.0)) {
        /* Face b1 = 0 reduces the error by sk2y^2/sk2, face b0 = 0 by sw*ybar^2. */
        double gain0 = sk2 > 0.0 && sk2y > 0.0 ? sk2y * sk2y / sk2 : 0.0;
        double gain1 = ybar > 0.0 ? sw * ybar * ybar : 0.0;
        b0 = gain0 > gain1 ? sk2y / sk2 : 0.0;
        b1 = gain0 > gain1 ? 0.0 : fmax(ybar, 0.0);
    }
    p->b0 = b0 / d->kscale;
    p->b1 = b1;
}

/* The linearised fit at a given b2: rows scaled by (l - b2)^2, i.e. weights (l - b2)^4. */
static void fit_linearised(struct conv_data *d, struct conv_params *p)
{
    for (size_t i = 0; i < d->n; i++) {
        double g = d->l[i] - p->b2;
        d->wt[i] = g * g * g * g;
        d->y[i] = 1.0 / g;
    }
    solve_rows(d, p);
    p->sse = sse_of(d, p);
}

/* One Gauss-Newton step on (b0, b1) at fixed b2: with u = b0*k + b1, the model
 * 1/u ~ 1/u0 - (u - u0)/u0^2, so rows weighted by 1/u0^2 with target 2*u0 - (l-b2)*u0^2.
 * Keeps the step only if it lowers the loss-space SSE. */
static void gauss_newton(struct conv_data *d, struct conv_params *p)
{
    struct conv_params q = *p;
    for (size_t i = 0; i < d->n; i++) {
        double u0 = p->b0 * d->k[i] + p->b1;
        if (!(u0 > 0.0))
            return;
        d->wt[i] = 1.0 / (u0 * u0 * u0 * u0);
        d->y[i] = 2.0 * u0 - (d->l[i] - p->b2) * u0 * u0;
    }
    solve_rows(d, &q);
    q.sse = sse_of(d, &q);
    if (q.sse < p->sse)
        *p = q;
}

static struct conv_params eval_b2(struct conv_data *d, double b2)
{
    struct conv_params p = {.b2 = b2};
    fit_linearised(d, &p);
    gauss_newton(d, &p);
    return p;
}

/* The grid: 0, then points approaching lmin geometrically (lmin*(1 - 2^-j)). */
static double grid_point(double lmin, int i)
{
    return i == 0 ? 0.0 : lmin * (1.0 - ldexp(1.0, -i));
}

static struct conv_params golden_search(struct conv_data *d, double lo, double hi,
                                        struct conv_params best)
{
    const double r = 0.6180339887498949;
    double x1 = hi - r * (hi - lo), x2 = lo + r * (hi - lo);
    struct conv_params p1 = eval_b2(d, x1), p2 = eval_b2(d, x2);
    for (int it = 0; it < CONV_GOLDEN_ITERS; it++) {
        if (p1.sse <= p2.sse) {
            hi = x2, x2 = x1, p2 = p1;
            x1 = hi - r * (hi - lo);
            p1 = eval_b2(d, x1);
        } else {
            lo = x1, x1 = x2, p1 = p2;
            x2 = lo + r * (hi - lo);
            p2 = eval_b2(d, x2);
        }
    }
    if (p1.sse < best.sse)
        best = p1;
    if (p2.sse < best.sse)
        best = p2;
    return best;
}

static struct conv_params search_b2(struct conv_data *d, double lmin)
{
    struct conv_params best = eval_b2(d, 0.0);
    int besti = 0;
    for (int i = 1; i < CONV_GRID; i++) {
        struct conv_params p = eval_b2(d, grid_point(lmin, i));
        if (p.sse < best.sse) {
            best = p;
            besti = i;
        }
    }
    double lo = besti > 0 ? grid_point(lmin, besti - 1) : 0.0;
    double hi = grid_point(lmin, besti + 1 < CONV_GRID ? besti + 1 : CONV_GRID);
    return golden_search(d, lo, hi, best);
}

static bool points_valid(const double *steps, const double *losses, size_t n, double *lmin,
                         double *kmax)
{
    *lmin = INFINITY;
    *kmax = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(steps[i]) || steps[i] < 0.0 || !isfinite(losses[i]) || losses[i] <= 0.0)
            return false;
        *lmin = fmin(*lmin, losses[i]);
        *kmax = fmax(*kmax, steps[i]);
    }
    return true;
}

int conv_fit(const double *steps, const double *losses, size_t n, struct conv_model *out)
{
    double lmin, kmax;
    if (!steps || !losses || !out || n < 3 || n > SIZE_MAX / (2 * sizeof(double)) ||
        !points_valid(steps, losses, n, &lmin, &kmax)) {
        errno = EINVAL;
        return -1;
    }
    struct conv_data d = {.k = steps, .l = losses, .n = n, .kscale = kmax > 0.0 ? kmax : 1.0};
    d.wt = malloc(2 * n * sizeof(double));
    if (!d.wt) {
        errno = ENOMEM;
        return -1;
    }
    d.y = d.wt + n;
    struct conv_params best = search_b2(&d, lmin);
    for (int i = 0; i < CONV_GN_ITERS; i++)
        gauss_newton(&d, &best);
    free(d.wt);
    if (!isfinite(best.sse)) {
        errno = EINVAL;
        return -1;
    }
    *out = (struct conv_model){.b0 = best.b0,
                               .b1 = best.b1,
                               .b2 = best.b2,
                               .rmse = sqrt(best.sse / (double)n),
                               .npoints = n,
                               .fitted = 1};
    return 0;
}

double conv_loss(const struct conv_model *m, double k)
{
    return predict(m->b0, m->b1, m->b2, k);
}

double conv_steps_to_loss(const struct conv_model *m, double k, double target)
{
    if (conv_loss(m, k) <= target)
        return 0.0;
    if (target <= m->b2 || m->b0 <= 0.0)
        return INFINITY;
    double kstar = (1.0 / (target - m->b2) - m->b1) / m->b0;
    return kstar > k ? kstar - k : 0.0;
}

double conv_steps_to_converge(const struct conv_model *m, double k, double steps_per_epoch,
                              double tol)
{
    if (m->b0 <= 0.0 || steps_per_epoch <= 0.0)
        return 0.0;
    if (!(tol > 0.0))
        return INFINITY;
    /* l(s) - l(s+E) = b0 E / (u (u + b0 E)) with u = b0 s + b1; it equals tol at
     * u = (-b + sqrt(b^2 + 4c)) / 2 = 2c / (b + sqrt(b^2 + 4c)), b = b0 E, c = b0 E / tol. */
    double b = m->b0 * steps_per_epoch, c = b / tol;
    double u = 2.0 * c / (b + sqrt(b * b + 4.0 * c));
    double sstar = (u - m->b1) / m->b0;
    return sstar > k ? sstar - k : 0.0;
}

void conv_fitter_init(struct conv_fitter *f)
{
    memset(f, 0, sizeof(*f));
}

/* Full: keep every other point of the older half (the first point stays), so recent
 * history stays dense and old history is thinned evenly. Frees a quarter of the buffer. */
static void thin(struct conv_fitter *f)
{
    size_t half = f->n / 2, out = 0;
    for (size_t i = 0; i < f->n; i++) {
        if (i < half && (i % 2) != 0)
            continue;
        f->steps[out] = f->steps[i];
        f->losses[out] = f->losses[i];
        out++;
    }
    f->n = out;
}

int conv_fitter_add(struct conv_fitter *f, double step, double loss)
{
    if (!isfinite(step) || step < 0.0 || !isfinite(loss) || loss <= 0.0) {
        errno = EINVAL;
        return -1;
    }
    if (f->n == CONV_FITTER_MAX_POINTS)
        thin(f);
    f->steps[f->n] = step;
    f->losses[f->n] = loss;
    f->n++;
    return 0;
}

int conv_fitter_refit(struct conv_fitter *f)
{
    return conv_fit(f->steps, f->losses, f->n, &f->model);
}
