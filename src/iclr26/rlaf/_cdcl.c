/*
 * The compiled core of iclr26.rlaf.cdcl: the same CDCL search as the pure-Python reference
 * (CDCLSolver with backend="python"), step for step, so that decisions, conflicts, propagations, restarts and the
 * first decisions are identical (tests/rlaf/test_rlaf_cdcl_native.py checks it on a fixed set of formulas).
 *
 * RLAF's guidance (Tönshoff & Grohe, ICLR 2026, arXiv 2505.16053) enters through three arrays the caller prepares:
 * the initial activity (w(x) or 0), the bump scale (w(x) or 1) and the initial phase (p(x) or false). See cdcl.py
 * for the algorithm; the comments here name the Python method each function mirrors.
 *
 * Literals: variable u = v - 1; literal 2u is "v true", 2u + 1 "v false"; lit ^ 1 negates.
 * The activity order is a binary heap with lazy deletion of (activity, u) entries, ordered by activity descending,
 * then u ascending; an entry is valid when u is unassigned and its key equals the current activity. Any correct
 * heap pops the same sequence as Python's heapq, because the order is total and equal entries are identical.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

#define RESCALE_LIMIT 1e100

typedef struct {
    int *data;
    int size, cap;
} IntVec;

static int vec_grow(IntVec *v) {
    int cap = v->cap ? 2 * v->cap : 4;
    int *data = realloc(v->data, (size_t)cap * sizeof(int));
    if (!data) return -1;
    v->data = data;
    v->cap = cap;
    return 0;
}

static inline int vec_push(IntVec *v, int x) {
    if (v->size == v->cap && vec_grow(v)) return -1;
    v->data[v->size++] = x;
    return 0;
}

typedef struct {
    double act;
    int u;
} HeapEntry;

typedef struct {
    int n;
    signed char *value; /* per literal: 1 true, -1 false, 0 unassigned */
    int *level, *reason;
    int *trail, trail_len;
    int *trail_lim, lim_len;
    int qhead;
    char *seen;
    /* clauses in one arena: mem[off - 2] is the clause index ci, mem[off - 1] the size (negated once deleted),
       mem[off ...] the literals; cl_off[ci] is clause ci's offset, cl_lbd[ci] its LBD. The watch lists hold offsets,
       so that propagation reaches a clause with one load from the arena instead of two */
    int *mem;
    size_t mem_len, mem_cap;
    int *cl_off, *cl_lbd, n_clauses, cl_cap;
    IntVec learnts;
    IntVec *watches;
    double var_inc;
    double *activity, *bump_scale;
    char *phase;
    HeapEntry *heap;
    int heap_len, heap_cap;
    long long decisions, conflicts, propagations, restarts;
    int *first_decisions, n_first, record_decisions;
    /* scratch */
    IntVec marked, learnt, kept;
    int *level_stamp, stamp;
    int oom;
} Solver;

/* ------------------------------------------------------------------ heap (heapq over (-activity, u)) */
static inline int before(const HeapEntry *a, const HeapEntry *b) {
    return a->act > b->act || (a->act == b->act && a->u < b->u);
}

static void heap_push(Solver *s, double act, int u) {
    if (s->heap_len == s->heap_cap) {
        int cap = s->heap_cap ? 2 * s->heap_cap : 16;
        HeapEntry *h = realloc(s->heap, (size_t)cap * sizeof(HeapEntry));
        if (!h) {
            s->oom = 1;
            return;
        }
        s->heap = h;
        s->heap_cap = cap;
    }
    HeapEntry e = {act, u};
    int i = s->heap_len++;
    while (i > 0) {
        int parent = (i - 1) >> 1;
        if (!before(&e, &s->heap[parent])) break;
        s->heap[i] = s->heap[parent];
        i = parent;
    }
    s->heap[i] = e;
}

static void sift_down(Solver *s, int i) {
    HeapEntry e = s->heap[i];
    int n = s->heap_len;
    for (;;) {
        int child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && before(&s->heap[child + 1], &s->heap[child])) child++;
        if (!before(&s->heap[child], &e)) break;
        s->heap[i] = s->heap[child];
        i = child;
    }
    s->heap[i] = e;
}

static HeapEntry heap_pop(Solver *s) {
    HeapEntry top = s->heap[0];
    s->heap[0] = s->heap[--s->heap_len];
    if (s->heap_len > 0) sift_down(s, 0);
    return top;
}

/* _rebuild_heap: every unassigned variable with its current activity */
static void rebuild_heap(Solver *s) {
    s->heap_len = 0;
    for (int u = 0; u < s->n; u++) {
        if (s->value[2 * u] == 0) s->heap[s->heap_len++] = (HeapEntry){s->activity[u], u};
    }
    for (int i = s->heap_len / 2 - 1; i >= 0; i--) sift_down(s, i);
}

/* ------------------------------------------------------------------ state */
static inline void assign(Solver *s, int lit, int reason) {
    s->value[lit] = 1;
    s->value[lit ^ 1] = -1;
    int u = lit >> 1;
    s->level[u] = s->lim_len;
    s->reason[u] = reason;
    s->trail[s->trail_len++] = lit;
}

/* _add_clause: copies lits into the arena */
static int add_clause(Solver *s, const int *lits, int size, int learnt, int lbd) {
    if (s->n_clauses == s->cl_cap) {
        int cap = s->cl_cap ? 2 * s->cl_cap : 64;
        int *off = realloc(s->cl_off, (size_t)cap * sizeof(int));
        if (off) s->cl_off = off;
        int *lb = realloc(s->cl_lbd, (size_t)cap * sizeof(int));
        if (lb) s->cl_lbd = lb;
        if (!off || !lb) {
            s->oom = 1;
            return -1;
        }
        s->cl_cap = cap;
    }
    if (s->mem_len + (size_t)size + 2 > s->mem_cap) {
        size_t cap = s->mem_cap ? 2 * s->mem_cap : 1024;
        while (cap < s->mem_len + (size_t)size + 2) cap *= 2;
        int *mem = realloc(s->mem, cap * sizeof(int));
        if (!mem) {
            s->oom = 1;
            return -1;
        }
        s->mem = mem;
        s->mem_cap = cap;
    }
    int index = s->n_clauses++;
    s->mem[s->mem_len] = index;
    s->mem[s->mem_len + 1] = size;
    int off = (int)s->mem_len + 2;
    memcpy(s->mem + off, lits, (size_t)size * sizeof(int));
    s->mem_len += (size_t)size + 2;
    s->cl_off[index] = off;
    s->cl_lbd[index] = lbd;
    if (vec_push(&s->watches[lits[0]], off) || vec_push(&s->watches[lits[1]], off)) s->oom = 1;
    if (learnt && vec_push(&s->learnts, index)) s->oom = 1;
    return index;
}

#define CLAUSE(s, ci) ((s)->mem + (s)->cl_off[ci])
#define CLAUSE_SIZE(s, ci) ((s)->mem[(s)->cl_off[ci] - 1])

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* _load: input clauses as sorted sets of solver literals, tautologies dropped; 0 if trivially UNSAT */
static int load(Solver *s, const int *flat, const Py_ssize_t *offsets, Py_ssize_t n_input) {
    for (Py_ssize_t c = 0; c < n_input; c++) {
        Py_ssize_t len = offsets[c + 1] - offsets[c];
        int *lits = malloc((size_t)(len > 0 ? len : 1) * sizeof(int));
        if (!lits) {
            s->oom = 1;
            return 0;
        }
        for (Py_ssize_t k = 0; k < len; k++) {
            int x = flat[offsets[c] + k];
            lits[k] = 2 * (abs(x) - 1) + (x < 0);
        }
        qsort(lits, (size_t)len, sizeof(int), cmp_int);
        int size = 0;
        for (Py_ssize_t k = 0; k < len; k++) {
            if (size == 0 || lits[size - 1] != lits[k]) lits[size++] = lits[k];
        }
        int tautology = 0;
        for (int k = 0; k + 1 < size; k++) {
            if ((lits[k] ^ 1) == lits[k + 1]) tautology = 1;
        }
        if (tautology) {
            free(lits);
            continue;
        }
        if (size == 0) {
            free(lits);
            return 0;
        }
        if (size == 1) {
            int lit = lits[0];
            free(lits);
            if (s->value[lit] == -1) return 0;
            if (s->value[lit] == 0) assign(s, lit, -1);
            continue;
        }
        add_clause(s, lits, size, 0, 0);
        free(lits);
        if (s->oom) return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ propagation (_propagate) */
static int propagate(Solver *s) {
    signed char *restrict value = s->value;
    int *restrict mem = s->mem; /* no clause is added during propagation: the arena does not move */
    int conflict = -1;
    while (s->qhead < s->trail_len && conflict < 0) {
        int false_lit = s->trail[s->qhead++] ^ 1;
        s->propagations++;
        IntVec *ws = &s->watches[false_lit];
        int *restrict data = ws->data;
        int i = 0, j = 0, end = ws->size;
        while (i < end) {
            if (i + 4 < end) __builtin_prefetch(mem + data[i + 4] - 2); /* the clause four watches ahead */
            int off = data[i++];
            int *c = mem + off;
            int first = c[0] ^ c[1] ^ false_lit; /* the other watched literal */
            if (value[first] == 1) {
                /* kept without writing the clause: the reference would order it (first, false_lit), but that order
                   is never read before the next visit that writes it (a reason's implied literal stays first) */
                data[j++] = off;
                continue;
            }
            c[0] = first;
            c[1] = false_lit;
            int moved = 0, size = c[-1];
            for (int k = 2; k < size; k++) {
                int lk = c[k];
                if (value[lk] != -1) {
                    c[1] = lk;
                    c[k] = false_lit;
                    if (vec_push(&s->watches[lk], off)) s->oom = 1;
                    moved = 1;
                    break;
                }
            }
            if (moved) continue;
            data[j++] = off;
            if (value[first] == -1) {
                conflict = c[-2];
                while (i < end) data[j++] = data[i++];
            } else {
                assign(s, first, c[-2]);
            }
        }
        ws->size = j;
    }
    return conflict;
}

/* ------------------------------------------------------------------ VSIDS (_bump, _pick_branch_var) */
static void bump(Solver *s, int u) {
    double a = s->activity[u] + s->var_inc * s->bump_scale[u];
    s->activity[u] = a;
    if (a > RESCALE_LIMIT) {
        for (int v = 0; v < s->n; v++) s->activity[v] *= 1e-100;
        s->var_inc *= 1e-100;
        rebuild_heap(s);
    }
}

static int pick_branch_var(Solver *s) {
    while (s->heap_len > 0) {
        HeapEntry e = heap_pop(s);
        if (s->value[2 * e.u] == 0 && e.act == s->activity[e.u]) return e.u;
    }
    return -1;
}

/* ------------------------------------------------------------------ conflict analysis (_analyze) */
/* Leaves the clause in s->kept (asserting literal first); returns its backjump level and LBD through pointers. */
static void analyze(Solver *s, int conflict, int *back_level, int *lbd) {
    int current = s->lim_len;
    s->learnt.size = 0;
    s->marked.size = 0;
    vec_push(&s->learnt, 0);
    int pending = 0, p = -1, index = s->trail_len - 1;
    int ci = conflict;
    for (;;) {
        int *c = CLAUSE(s, ci);
        for (int k = (p < 0 ? 0 : 1); k < c[-1]; k++) {
            int q = c[k], u = q >> 1;
            if (!s->seen[u] && s->level[u] > 0) {
                s->seen[u] = 1;
                if (vec_push(&s->marked, u)) s->oom = 1;
                bump(s, u);
                if (s->level[u] >= current)
                    pending++;
                else if (vec_push(&s->learnt, q))
                    s->oom = 1;
            }
        }
        while (!s->seen[s->trail[index] >> 1]) index--;
        p = s->trail[index--];
        int u = p >> 1;
        s->seen[u] = 0;
        pending--;
        if (pending == 0) break;
        ci = s->reason[u];
    }
    s->learnt.data[0] = p ^ 1;
    /* MiniSat's basic minimisation */
    s->kept.size = 0;
    vec_push(&s->kept, s->learnt.data[0]);
    for (int k = 1; k < s->learnt.size; k++) {
        int q = s->learnt.data[k];
        int r = s->reason[q >> 1];
        int keep = r < 0;
        if (!keep) {
            const int *rc = CLAUSE(s, r);
            for (int m = 1; m < rc[-1]; m++) {
                int x = rc[m];
                if (!s->seen[x >> 1] && s->level[x >> 1] > 0) {
                    keep = 1;
                    break;
                }
            }
        }
        if (keep && vec_push(&s->kept, q)) s->oom = 1;
    }
    for (int k = 0; k < s->marked.size; k++) s->seen[s->marked.data[k]] = 0;
    int *kept = s->kept.data;
    if (s->kept.size == 1) {
        *back_level = 0;
        *lbd = 1;
        return;
    }
    int best = 1;
    for (int k = 2; k < s->kept.size; k++) {
        if (s->level[kept[k] >> 1] > s->level[kept[best] >> 1]) best = k;
    }
    int tmp = kept[1];
    kept[1] = kept[best];
    kept[best] = tmp;
    s->stamp++;
    int distinct = 0;
    for (int k = 0; k < s->kept.size; k++) {
        int lv = s->level[kept[k] >> 1];
        if (s->level_stamp[lv] != s->stamp) {
            s->level_stamp[lv] = s->stamp;
            distinct++;
        }
    }
    *back_level = s->level[kept[1] >> 1];
    *lbd = distinct;
}

/* _backtrack */
static void backtrack(Solver *s, int target) {
    if (s->lim_len <= target) return;
    int limit = s->trail_lim[target];
    for (int i = s->trail_len - 1; i >= limit; i--) {
        int lit = s->trail[i], u = lit >> 1;
        s->value[lit] = 0;
        s->value[lit ^ 1] = 0;
        s->reason[u] = -1;
        s->phase[u] = !(lit & 1); /* phase saving */
        heap_push(s, s->activity[u], u);
    }
    s->trail_len = limit;
    s->lim_len = target;
    s->qhead = limit;
    if (s->heap_len > 8 * s->n + 64) rebuild_heap(s);
}

/* _reduce_learnts: drop the worse half (highest LBD, then older first); glue clauses (LBD <= 2) and locked kept */
static const int *g_lbd;
static int cmp_rank(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    if (g_lbd[x] != g_lbd[y]) return g_lbd[x] > g_lbd[y] ? -1 : 1;
    return (x > y) - (x < y);
}

/* Arena compaction after each reduction, as MiniSat's garbage collection does: the deleted clauses' watches are
   removed and the live clauses move down, in order. The search is unchanged: it depends on the order of each watch
   list, which is kept (the reference drops a deleted clause's watch when propagation meets it), not on where a clause
   lies. Propagation then never meets a deleted clause (the live clauses stop being scattered among deleted
   ones, and propagation does not read a clause's size unless it looks for a new watch). */
static void collect_garbage(Solver *s) {
    int *mem = s->mem;
    for (int l = 0; l < 2 * s->n; l++) { /* watches: offsets -> clause indices, deleted clauses' watches dropped */
        IntVec *ws = &s->watches[l];
        int j = 0;
        for (int i = 0; i < ws->size; i++) {
            int off = ws->data[i];
            if (mem[off - 1] > 0) ws->data[j++] = mem[off - 2];
        }
        ws->size = j;
    }
    size_t read = 0, write = 0;
    while (read < s->mem_len) {
        int index = mem[read], size = mem[read + 1];
        size_t len = (size_t)(size > 0 ? size : -size) + 2;
        if (size > 0) {
            if (write != read) memmove(mem + write, mem + read, len * sizeof(int));
            s->cl_off[index] = (int)write + 2;
            write += len;
        }
        read += len;
    }
    s->mem_len = write;
    for (int l = 0; l < 2 * s->n; l++) { /* watches: clause indices -> new offsets */
        IntVec *ws = &s->watches[l];
        for (int i = 0; i < ws->size; i++) ws->data[i] = s->cl_off[ws->data[i]];
    }
}

static void reduce_learnts(Solver *s) {
    int n = s->learnts.size;
    int *ranked = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (!ranked) {
        s->oom = 1;
        return;
    }
    memcpy(ranked, s->learnts.data, (size_t)n * sizeof(int));
    g_lbd = s->cl_lbd;
    qsort(ranked, (size_t)n, sizeof(int), cmp_rank);
    int budget = n / 2;
    for (int k = 0; k < n && budget > 0; k++) {
        int ci = ranked[k];
        int first = CLAUSE(s, ci)[0];
        int locked = s->value[first] == 1 && s->reason[first >> 1] == ci;
        if (s->cl_lbd[ci] <= 2 || locked) continue;
        CLAUSE_SIZE(s, ci) = -CLAUSE_SIZE(s, ci); /* its watches go in collect_garbage */
        budget--;
    }
    free(ranked);
    int j = 0; /* survivors, ascending as before */
    for (int k = 0; k < n; k++) {
        if (CLAUSE_SIZE(s, s->learnts.data[k]) > 0) s->learnts.data[j++] = s->learnts.data[k];
    }
    s->learnts.size = j;
    collect_garbage(s);
}

static double luby(double base, long long index) {
    long long size = 1, seq = 0;
    while (size < index + 1) {
        seq++;
        size = 2 * size + 1;
    }
    long long x = index;
    while (size - 1 != x) {
        size = (size - 1) >> 1;
        seq--;
        x %= size;
    }
    double r = 1.0;
    for (long long k = 0; k < seq; k++) r *= base;
    return r;
}

/* _search: 0 UNSAT, 1 SAT, 2 UNKNOWN */
static int search(Solver *s, const int *flat, const Py_ssize_t *offsets, Py_ssize_t n_input, double var_decay,
                  long long restart_base, double learnt_fraction, double learnt_growth, long long max_conflicts) {
    if (!load(s, flat, offsets, n_input) || propagate(s) >= 0) return 0;
    double max_learnts = learnt_fraction * (double)s->n_clauses;
    if (max_learnts < 10.0) max_learnts = 10.0;
    long long restart_index = 0;
    double restart_budget = luby(2.0, restart_index) * (double)restart_base;
    long long since_restart = 0;
    for (;;) {
        if (s->oom) return -1;
        int conflict = propagate(s);
        if (conflict >= 0) {
            s->conflicts++;
            since_restart++;
            if (s->lim_len == 0) return 0;
            int back_level, lbd;
            analyze(s, conflict, &back_level, &lbd);
            backtrack(s, back_level);
            if (s->kept.size == 1) {
                assign(s, s->kept.data[0], -1);
            } else {
                int index = add_clause(s, s->kept.data, s->kept.size, 1, lbd);
                if (index < 0) return -1;
                assign(s, s->kept.data[0], index);
            }
            s->var_inc /= var_decay; /* VSIDS decay, done by growing the increment */
            if (max_conflicts > 0 && s->conflicts >= max_conflicts) return 2;
            continue;
        }
        if ((double)since_restart >= restart_budget) {
            backtrack(s, 0);
            s->restarts++;
            restart_index++;
            restart_budget = luby(2.0, restart_index) * (double)restart_base;
            since_restart = 0;
        }
        if ((double)(s->learnts.size - s->trail_len) >= max_learnts) {
            reduce_learnts(s);
            max_learnts *= learnt_growth;
        }
        int u = pick_branch_var(s);
        if (u < 0) return 1;
        s->decisions++;
        int lit = 2 * u + (s->phase[u] ? 0 : 1);
        if (s->n_first < s->record_decisions) s->first_decisions[s->n_first++] = (lit & 1) == 0 ? u + 1 : -(u + 1);
        s->trail_lim[s->lim_len++] = s->trail_len;
        assign(s, lit, -1);
    }
}

static void solver_free(Solver *s) {
    free(s->value);
    free(s->level);
    free(s->reason);
    free(s->trail);
    free(s->trail_lim);
    free(s->seen);
    free(s->mem);
    free(s->cl_off);
    free(s->cl_lbd);
    free(s->learnts.data);
    if (s->watches) {
        for (int l = 0; l < 2 * s->n; l++) free(s->watches[l].data);
    }
    free(s->watches);
    free(s->activity);
    free(s->bump_scale);
    free(s->phase);
    free(s->heap);
    free(s->first_decisions);
    free(s->marked.data);
    free(s->learnt.data);
    free(s->kept.data);
    free(s->level_stamp);
}

/*
 * solve(num_vars, literals, offsets, activity, bump_scale, phase, var_decay, restart_base, learnt_fraction,
 *       learnt_growth, max_conflicts, record_decisions)
 *   literals: int32 buffer of the DIMACS literals of all clauses, concatenated; offsets: int64 buffer (C + 1);
 *   activity, bump_scale: float64 buffers (V); phase: uint8 buffer (V); max_conflicts: 0 = no limit.
 * -> (status 0 UNSAT / 1 SAT / 2 UNKNOWN, values bytes (V: 1 true, 0 false; SAT only), decisions, conflicts,
 *     propagations, restarts, first decisions list)
 */
static PyObject *py_solve(PyObject *self, PyObject *args) {
    int n;
    Py_buffer lits_b, offs_b, act_b, bump_b, phase_b;
    double var_decay, learnt_fraction, learnt_growth;
    long long restart_base, max_conflicts;
    int record_decisions;
    if (!PyArg_ParseTuple(args, "iy*y*y*y*y*dLddLi", &n, &lits_b, &offs_b, &act_b, &bump_b, &phase_b, &var_decay,
                          &restart_base, &learnt_fraction, &learnt_growth, &max_conflicts, &record_decisions))
        return NULL;
    PyObject *result = NULL;
    Solver s;
    memset(&s, 0, sizeof(s));
    Py_ssize_t n_input = offs_b.len / (Py_ssize_t)sizeof(Py_ssize_t) - 1;
    if (n < 0 || n_input < 0 || act_b.len != (Py_ssize_t)n * 8 || bump_b.len != (Py_ssize_t)n * 8 ||
        phase_b.len != n || lits_b.len % 4 != 0 || record_decisions < 0) {
        PyErr_SetString(PyExc_ValueError, "_cdcl.solve: inconsistent buffer sizes");
        goto done;
    }
    s.n = n;
    s.record_decisions = record_decisions;
    size_t nn = (size_t)(n > 0 ? n : 1);
    s.value = calloc(2 * nn, 1);
    s.level = calloc(nn, sizeof(int));
    s.reason = malloc(nn * sizeof(int));
    s.trail = malloc(nn * sizeof(int));
    s.trail_lim = malloc((nn + 1) * sizeof(int));
    s.seen = calloc(nn, 1);
    s.watches = calloc(2 * nn, sizeof(IntVec));
    s.activity = malloc(nn * sizeof(double));
    s.bump_scale = malloc(nn * sizeof(double));
    s.phase = malloc(nn);
    s.heap = malloc(nn * sizeof(HeapEntry));
    s.heap_cap = (int)nn;
    s.first_decisions = malloc((size_t)(record_decisions > 0 ? record_decisions : 1) * sizeof(int));
    s.level_stamp = calloc(nn + 1, sizeof(int));
    if (!s.value || !s.level || !s.reason || !s.trail || !s.trail_lim || !s.seen || !s.watches || !s.activity ||
        !s.bump_scale || !s.phase || !s.heap || !s.first_decisions || !s.level_stamp) {
        PyErr_NoMemory();
        goto done;
    }
    for (int u = 0; u < n; u++) s.reason[u] = -1;
    memcpy(s.activity, act_b.buf, (size_t)n * sizeof(double));
    memcpy(s.bump_scale, bump_b.buf, (size_t)n * sizeof(double));
    for (int u = 0; u < n; u++) s.phase[u] = ((const unsigned char *)phase_b.buf)[u] != 0;
    s.var_inc = 1.0;
    rebuild_heap(&s);
    const int *flat = lits_b.buf;
    const Py_ssize_t *offsets = offs_b.buf;
    Py_ssize_t n_lits = lits_b.len / 4;
    for (Py_ssize_t c = 0; c < n_input; c++) {
        if (offsets[c] < 0 || offsets[c] > offsets[c + 1] || offsets[c + 1] > n_lits) {
            PyErr_SetString(PyExc_ValueError, "_cdcl.solve: offsets out of range");
            goto done;
        }
    }
    for (Py_ssize_t k = 0; k < n_lits; k++) {
        if (flat[k] == 0 || abs(flat[k]) > n) {
            PyErr_SetString(PyExc_ValueError, "_cdcl.solve: literal out of range");
            goto done;
        }
    }
    int status;
    Py_BEGIN_ALLOW_THREADS status = search(&s, flat, offsets, n_input, var_decay, restart_base, learnt_fraction,
                                           learnt_growth, max_conflicts);
    Py_END_ALLOW_THREADS if (status < 0 || s.oom) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *values = PyBytes_FromStringAndSize(NULL, status == 1 ? n : 0);
    if (!values) goto done;
    if (status == 1) {
        char *out = PyBytes_AS_STRING(values);
        for (int u = 0; u < n; u++) out[u] = s.value[2 * u] == 1;
    }
    PyObject *first = PyList_New(s.n_first);
    if (!first) {
        Py_DECREF(values);
        goto done;
    }
    for (int k = 0; k < s.n_first; k++) PyList_SET_ITEM(first, k, PyLong_FromLong(s.first_decisions[k]));
    result = Py_BuildValue("iNLLLLN", status, values, s.decisions, s.conflicts, s.propagations, s.restarts, first);
done:
    solver_free(&s);
    PyBuffer_Release(&lits_b);
    PyBuffer_Release(&offs_b);
    PyBuffer_Release(&act_b);
    PyBuffer_Release(&bump_b);
    PyBuffer_Release(&phase_b);
    return result;
}

static PyMethodDef methods[] = {
    {"solve", py_solve, METH_VARARGS, "Run the CDCL search (see iclr26.rlaf.cdcl); internal."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cdcl", "Compiled core of iclr26.rlaf.cdcl.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__cdcl(void) { return PyModule_Create(&module); }
