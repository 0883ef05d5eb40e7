/*
 * The compiled CFR+ loop of iclr26.lamir.subgame: the iterations of solve_cfr_plus with the passes of
 * subgame.CfrPasses, operation for operation, so that the average strategies are bit-for-bit those of the numpy
 * loop (tests/lamir/test_lamir_cfr_native.py compares them). Each numpy expression is computed here in the same
 * order of the same IEEE double operations: an elementwise product left to right, a bincount as a sum from 0.0 in
 * index order. No contraction into fused multiply-adds happens: the default x86-64 target has none, and the build
 * passes -ffp-contract=off for targets that do.
 *
 * Layout (prepared by subgame.CfrPasses.native_arrays): the strategy buffer [σ_0 (M_0), 1, 0, σ_1 (M_1), 1, 0]; the
 * edges sorted by depth with layer bounds; per edge both players' buffer positions and the chance probability; per
 * player the edges where it acts (parent, signed chance reach, child, the opponent's buffer position, probability,
 * own action index), its action -> infoset map, its decision nodes with their infosets, and its uniform strategy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    Py_buffer b;
    int used;
} Buf;

typedef struct {
    const long long *parent, *child, *pos; /* act edges: parent, child, opponent's buffer position */
    const double *signed_chance, *prob;
    const long long *own_ia;
    Py_ssize_t n_act;
    const long long *ia_infoset; /* action -> infoset */
    Py_ssize_t n_actions, n_infosets;
    const long long *dec_nodes, *dec_infosets;
    Py_ssize_t n_dec;
    const double *uniform;
    double *avg;
    Py_ssize_t offset;
} Player;

/* reach[p][child] = reach[p][parent] * buffer[pos_p], layer by layer from the roots (the path table's products) */
static void reaches(int n, Py_ssize_t n_edges, const long long *parent, const long long *child,
                    const long long *pos0, const long long *pos1, const double *init, const double *buffer,
                    double *reach) {
    memcpy(reach, init, (size_t)n * sizeof(double));
    memcpy(reach + n, init, (size_t)n * sizeof(double));
    for (Py_ssize_t e = 0; e < n_edges; e++) {
        reach[child[e]] = reach[parent[e]] * buffer[pos0[e]];
        reach[n + child[e]] = reach[n + parent[e]] * buffer[pos1[e]];
    }
}

/* _values(top): bottom-up from the deepest layer to layer `top`; weight = (σ_0 · σ_1) · probability */
static void values(int n, const long long *bounds, Py_ssize_t n_layers, Py_ssize_t top, const long long *parent,
                   const long long *child, const long long *pos0, const long long *pos1, const double *prob,
                   const double *terminal_utility, const double *buffer, double *value) {
    memcpy(value, terminal_utility, (size_t)n * sizeof(double));
    for (Py_ssize_t d = n_layers - 1; d >= top; d--) {
        for (long long e = bounds[d]; e < bounds[d + 1]; e++) value[parent[e]] = 0.0;
        for (long long e = bounds[d]; e < bounds[d + 1]; e++) {
            double w = buffer[pos0[e]] * buffer[pos1[e]] * prob[e];
            value[parent[e]] += w * value[child[e]];
        }
    }
}

/* one player's update: steps 4-6 and regret matching+ (solve_cfr_plus's loop body) */
static void update(Player *pl, const double *reach_opp, const double *reach_own, const double *value, double t,
                   double *buffer, double *regret, double *q, double *per_infoset) {
    double *sigma = buffer + pl->offset;
    /* step 4: q = bincount(own_ia, (reach_opp[par] * signed_chance * buffer[opp_pos] * prob) * value[child]) */
    memset(q, 0, (size_t)pl->n_actions * sizeof(double));
    for (Py_ssize_t k = 0; k < pl->n_act; k++) {
        double w = reach_opp[pl->parent[k]] * pl->signed_chance[k] * buffer[pl->pos[k]] * pl->prob[k];
        q[pl->own_ia[k]] += w * value[pl->child[k]];
    }
    /* step 5: expected = bincount(ia, σ · q); regret = max((regret + q) - expected[ia], 0) */
    memset(per_infoset, 0, (size_t)pl->n_infosets * sizeof(double));
    for (Py_ssize_t a = 0; a < pl->n_actions; a++) per_infoset[pl->ia_infoset[a]] += sigma[a] * q[a];
    for (Py_ssize_t a = 0; a < pl->n_actions; a++) {
        double r = regret[a] + q[a] - per_infoset[pl->ia_infoset[a]];
        regret[a] = r > 0.0 ? r : 0.0; /* numpy's maximum(r, 0): the second operand unless r is larger */
    }
    /* step 6: avg += (t · own_reach[ia]) · σ */
    memset(per_infoset, 0, (size_t)pl->n_infosets * sizeof(double));
    for (Py_ssize_t k = 0; k < pl->n_dec; k++) per_infoset[pl->dec_infosets[k]] += reach_own[pl->dec_nodes[k]];
    for (Py_ssize_t a = 0; a < pl->n_actions; a++) pl->avg[a] += t * per_infoset[pl->ia_infoset[a]] * sigma[a];
    /* step 1 for the next iteration: σ = regret / Σ regret per infoset, uniform where the sum is 0 */
    memset(per_infoset, 0, (size_t)pl->n_infosets * sizeof(double));
    for (Py_ssize_t a = 0; a < pl->n_actions; a++) per_infoset[pl->ia_infoset[a]] += regret[a];
    for (Py_ssize_t a = 0; a < pl->n_actions; a++) {
        double denom = per_infoset[pl->ia_infoset[a]];
        sigma[a] = denom > 0 ? regret[a] / denom : pl->uniform[a];
    }
}

/* array i of `seq` as a C-contiguous buffer of int64 ('q'/'l') or float64 ('d') */
static int get(PyObject *seq, Py_ssize_t i, Buf *buf, int is_float, int writable, Py_ssize_t *count) {
    PyObject *item = PySequence_GetItem(seq, i);
    if (!item) return -1;
    int rc = PyObject_GetBuffer(item, &buf->b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0));
    Py_DECREF(item);
    if (rc) return -1;
    buf->used = 1;
    const char *f = buf->b.format ? buf->b.format : "B";
    int ok = buf->b.itemsize == 8 && (is_float ? strcmp(f, "d") == 0 : (strcmp(f, "q") == 0 || strcmp(f, "l") == 0));
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "_cfr.solve: array %zd must be %s", i, is_float ? "float64" : "int64");
        return -1;
    }
    *count = buf->b.len / 8;
    return 0;
}

#define N_ARRAYS 32

/*
 * solve(iterations, num_nodes, top, arrays) -> None; arrays (see CfrPasses.native_arrays), C-contiguous:
 *   0 buffer (float64, written), 1 layer bounds, 2 edge parent, 3 edge child, 4-5 both players' buffer positions,
 *   6 edge probability, 7 reach at the start (1 at the roots), 8 terminal utility; per player p (block 9 + 11 p):
 *   act parent, act signed chance reach, act child, act opponent position, act probability, act own action,
 *   action -> infoset, decision nodes, their infosets, uniform strategy, average strategy (float64, accumulated);
 *   31: (offset of σ_1 in the buffer, J_0, J_1). Every index is checked against its array before the loop.
 */
static PyObject *py_solve(PyObject *self, PyObject *args) {
    long long iterations, top;
    int n;
    PyObject *arrays;
    if (!PyArg_ParseTuple(args, "LiLO", &iterations, &n, &top, &arrays)) return NULL;
    if (!PySequence_Check(arrays) || PySequence_Size(arrays) != N_ARRAYS) {
        PyErr_Format(PyExc_ValueError, "_cfr.solve: arrays must be a sequence of %d buffers", N_ARRAYS);
        return NULL;
    }
    static const char is_float[N_ARRAYS] = {1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 1, 0, 0, 1, 0, 0,
                                            0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0};
    Buf bufs[N_ARRAYS];
    Py_ssize_t len[N_ARRAYS];
    memset(bufs, 0, sizeof(bufs));
    PyObject *result = NULL;
    double *scratch = NULL;
    for (int i = 0; i < N_ARRAYS; i++) {
        if (get(arrays, i, &bufs[i], is_float[i], i == 0 || i == 19 || i == 30, &len[i])) goto done;
    }
    const long long *meta = bufs[31].b.buf; /* offset of σ_1, J_0, J_1 */
    const long long *bounds = bufs[1].b.buf;
    Py_ssize_t n_layers = len[1] - 1, n_edges = len[2], n_buffer = len[0];
    int bad = n < 1 || n_layers < 0 || len[31] != 3 || len[3] != n_edges || len[4] != n_edges || len[5] != n_edges ||
              len[6] != n_edges || len[7] != n || len[8] != n || top < 0 || iterations < 0;
    for (Py_ssize_t d = 0; !bad && d <= n_layers; d++)
        bad = bounds[d] < 0 || bounds[d] > n_edges || (d > 0 && bounds[d] < bounds[d - 1]);
    const long long *idx_node[] = {bufs[2].b.buf, bufs[3].b.buf};
    for (int k = 0; !bad && k < 2; k++)
        for (Py_ssize_t e = 0; !bad && e < n_edges; e++) bad = idx_node[k][e] < 0 || idx_node[k][e] >= n;
    const long long *idx_buf[] = {bufs[4].b.buf, bufs[5].b.buf};
    for (int k = 0; !bad && k < 2; k++)
        for (Py_ssize_t e = 0; !bad && e < n_edges; e++) bad = idx_buf[k][e] < 0 || idx_buf[k][e] >= n_buffer;
    Player pl[2];
    for (int p = 0; p < 2 && !bad; p++) {
        int b = 9 + 11 * p;
        Py_ssize_t n_act = len[b], n_actions = len[b + 6], n_infosets = meta[1 + p], n_dec = len[b + 7];
        bad = len[b + 1] != n_act || len[b + 2] != n_act || len[b + 3] != n_act || len[b + 4] != n_act ||
              len[b + 5] != n_act || len[b + 8] != n_dec || len[b + 9] != n_actions || len[b + 10] != n_actions ||
              n_infosets < 0;
        pl[p] = (Player){bufs[b].b.buf,     bufs[b + 2].b.buf, bufs[b + 3].b.buf, bufs[b + 1].b.buf,
                         bufs[b + 4].b.buf, bufs[b + 5].b.buf, n_act,             bufs[b + 6].b.buf,
                         n_actions,         n_infosets,        bufs[b + 7].b.buf, bufs[b + 8].b.buf,
                         n_dec,             bufs[b + 9].b.buf, bufs[b + 10].b.buf, p == 0 ? 0 : meta[0]};
        bad = bad || pl[p].offset < 0 || pl[p].offset + n_actions > n_buffer;
        for (Py_ssize_t k = 0; !bad && k < n_act; k++)
            bad = pl[p].parent[k] < 0 || pl[p].parent[k] >= n || pl[p].child[k] < 0 || pl[p].child[k] >= n ||
                  pl[p].pos[k] < 0 || pl[p].pos[k] >= n_buffer || pl[p].own_ia[k] < 0 || pl[p].own_ia[k] >= n_actions;
        for (Py_ssize_t a = 0; !bad && a < n_actions; a++)
            bad = pl[p].ia_infoset[a] < 0 || pl[p].ia_infoset[a] >= n_infosets;
        for (Py_ssize_t k = 0; !bad && k < n_dec; k++)
            bad = pl[p].dec_nodes[k] < 0 || pl[p].dec_nodes[k] >= n || pl[p].dec_infosets[k] < 0 ||
                  pl[p].dec_infosets[k] >= n_infosets;
    }
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "_cfr.solve: inconsistent arrays (sizes or indices out of range)");
        goto done;
    }
    Py_ssize_t m = pl[0].n_actions > pl[1].n_actions ? pl[0].n_actions : pl[1].n_actions;
    Py_ssize_t j = pl[0].n_infosets > pl[1].n_infosets ? pl[0].n_infosets : pl[1].n_infosets;
    /* reach (2 n), value (n), q (m), per-infoset sums (j), both players' regrets */
    scratch = malloc(((size_t)3 * n + (size_t)m + (size_t)(j > 0 ? j : 1) + (size_t)pl[0].n_actions +
                      (size_t)pl[1].n_actions) *
                     sizeof(double));
    if (!scratch) {
        PyErr_NoMemory();
        goto done;
    }
    double *reach = scratch, *value = reach + 2 * n, *q = value + n, *per_infoset = q + m;
    double *regret[2] = {per_infoset + (j > 0 ? j : 1), NULL};
    regret[1] = regret[0] + pl[0].n_actions;
    memset(regret[0], 0, (size_t)(pl[0].n_actions + pl[1].n_actions) * sizeof(double));
    double *buffer = bufs[0].b.buf;
    const long long *parent = bufs[2].b.buf, *child = bufs[3].b.buf, *pos0 = bufs[4].b.buf, *pos1 = bufs[5].b.buf;
    const double *prob = bufs[6].b.buf, *init = bufs[7].b.buf, *utility = bufs[8].b.buf;
    Py_BEGIN_ALLOW_THREADS for (long long t = 1; t <= iterations; t++) {
        for (int p = 0; p < 2; p++) {
            reaches(n, n_edges, parent, child, pos0, pos1, init, buffer, reach);
            values(n, bounds, n_layers, (Py_ssize_t)top, parent, child, pos0, pos1, prob, utility, buffer, value);
            update(&pl[p], reach + (1 - p) * n, reach + p * n, value, (double)t, buffer, regret[p], q, per_infoset);
        }
    }
    Py_END_ALLOW_THREADS result = Py_None;
    Py_INCREF(result);
done:
    free(scratch);
    for (int i = 0; i < N_ARRAYS; i++)
        if (bufs[i].used) PyBuffer_Release(&bufs[i].b);
    return result;
}

static PyMethodDef methods[] = {
    {"solve", py_solve, METH_VARARGS, "Run CFR+ iterations (see iclr26.lamir.subgame.solve_cfr_plus); internal."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cfr", "Compiled CFR+ loop of iclr26.lamir.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__cfr(void) { return PyModule_Create(&module); }
