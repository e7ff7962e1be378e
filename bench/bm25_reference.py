#!/usr/bin/python3
"""Independent BM25 reference for gpuir (python3 standard library only).

It takes the tokens from PostgreSQL itself, once: for every document the
lexemes of to_tsvector(config, body) with tf = number of positions and
dl = sum of tf; the query lexemes are the distinct lexemes of
to_tsvector(config, query). Scoring is plain python (double precision):

    N     = number of documents with dl > 0,  avgdl = sum(dl) / N
    idf   = ln(1 + (N - df + 0.5) / (df + 0.5))
    score = sum over query lexemes t in d of idf(t) * tf*(k1+1) / (tf + k1*(1 - b + b*dl/avgdl))

Results are ordered by score descending, ties by ctid ascending (doc order).
No code is shared with the extension; only the text search parser/dictionaries
of PostgreSQL are, which is the point (gpuir must tokenize like to_tsvector).

Caveat: a tsvector keeps at most 255 positions per lexeme (and positions stop
at 16383), while gpuir counts every occurrence. Documents that hit these limits
(3 in CACM: long citation lists, e.g. CACM-1491 has '1491' 288 times) are
recounted from ts_debug() tokens (same parser and dictionaries), unless
--tsvector-tf is given.

Used by `bench/quality --check-reference` and `bench/quality --reference-only`.
Standalone, against the database in the PG* environment variables:

    pg_virtualenv -t -v 15 -- bench/bm25_reference.py --load            # reference metrics only
    bench/bm25_reference.py --doc-table scifact_docs --query-table scifact_queries \
                            --index scifact_gpuir                        # compare with gpuir
"""

import argparse
import math
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402


class ReferenceBM25:
    def __init__(self, doc_table, config="english", k1=0.9, b=0.4, exact_tf=True):
        """exact_tf: documents whose tsvector is capped (a lexeme with 255 positions, the
        most a tsvector keeps, or a position at the 16383 limit) are recounted from
        ts_debug() tokens, since gpuir counts every occurrence. exact_tf=False keeps the
        capped tsvector counts."""
        self.k1 = k1
        self.b = b
        self.config = config
        cfg = bl.sql_literal(config) + "::regconfig"
        rows = bl.copy_out(
            "SELECT d.ctid, d.id, u.lexeme, cardinality(u.positions), "
            "u.positions[cardinality(u.positions)] "
            "FROM %s d CROSS JOIN LATERAL unnest(to_tsvector(%s, d.body)) u" % (doc_table, cfg))
        docs = {}       # ctid -> [docid, {lexeme: tf}]
        capped = set()
        for ctid, docid, lex, npos, lastpos in rows:
            ent = docs.get(ctid)
            if ent is None:
                ent = docs[ctid] = [docid, {}]
            npos = int(npos)
            ent[1][lex] = npos
            if npos >= 255 or int(lastpos) >= 16383:
                capped.add(ctid)
        self.capped_docs = len(capped)
        self.recounted_docs = 0
        if capped and exact_tf:
            for c in capped:
                docs[c][1] = {}
            arr = bl.sql_literal("{" + ",".join('"%s"' % c for c in capped) + "}") + "::tid[]"
            for ctid, lex, n in bl.copy_out(
                    "SELECT d.ctid, l.lexeme, count(*) FROM %s d "
                    "CROSS JOIN LATERAL ts_debug(%s, d.body) t "
                    "CROSS JOIN LATERAL unnest(t.lexemes) l(lexeme) "
                    "WHERE d.ctid = ANY(%s) GROUP BY 1, 2" % (doc_table, cfg, arr)):
                docs[ctid][1][lex] = int(n)
            self.recounted_docs = len(capped)
        order = sorted(docs, key=bl.parse_ctid)      # doc number = ctid order
        self.ctids = order
        self.docids = [docs[c][0] for c in order]
        self.doc_tfs = [docs[c][1] for c in order]
        self.dl = []
        self.postings = {}   # lexeme -> list of (docno, tf)
        for i, c in enumerate(order):
            tfs = docs[c][1]
            dl = sum(tfs.values())
            self.dl.append(dl)
            for lex, tf in tfs.items():
                self.postings.setdefault(lex, []).append((i, tf))
        self.N = sum(1 for x in self.dl if x > 0)
        self.avgdl = (sum(self.dl) / self.N) if self.N else 0.0
        # per-doc length normalisation constant k1*(1-b+b*dl/avgdl)
        self.norm = [k1 * (1.0 - b + b * dl / self.avgdl) if self.avgdl else k1 for dl in self.dl]
        self.idf = {}
        for lex, pl in self.postings.items():
            df = len(pl)
            self.idf[lex] = math.log(1.0 + (self.N - df + 0.5) / (df + 0.5))

    def stats(self):
        return {"docs": self.N, "terms": len(self.postings),
                "postings": sum(len(p) for p in self.postings.values()),
                "tokens": sum(self.dl), "avgdl": self.avgdl, "capped_docs": self.capped_docs, "recounted_docs": self.recounted_docs}

    def score(self, docno, lexemes):
        tfs = self.doc_tfs[docno]
        s = 0.0
        for lex in set(lexemes):
            tf = tfs.get(lex)
            if tf:
                s += self.idf[lex] * tf * (self.k1 + 1.0) / (tf + self.norm[docno])
        return s

    def search(self, lexemes, k=10):
        """lexemes: distinct query lexemes. Returns [(docno, score)] best first, ties by docno."""
        acc = {}
        k1p1 = self.k1 + 1.0
        for lex in set(lexemes):
            pl = self.postings.get(lex)
            if not pl:
                continue
            idf = self.idf[lex]
            norm = self.norm
            for d, tf in pl:
                acc[d] = acc.get(d, 0.0) + idf * tf * k1p1 / (tf + norm[d])
        res = sorted(acc.items(), key=lambda x: (-x[1], x[0]))
        return res[:k]


def query_lexemes(query_table, config="english"):
    """{qid: [distinct lexemes of to_tsvector(config, query)]} (every qid present)."""
    cfg = bl.sql_literal(config) + "::regconfig"
    out = {}
    for (qid,) in bl.copy_out("SELECT qid FROM %s" % query_table):
        out[qid] = []
    for qid, lex in bl.copy_out(
            "SELECT q.qid, u.lexeme FROM %s q "
            "CROSS JOIN LATERAL unnest(to_tsvector(%s, q.query)) u" % (query_table, cfg)):
        out[qid].append(lex)
    return out


def reference_run(ref, qlex, k=1000):
    """{qid: [(docid, score)]} best first (for metrics)."""
    return {qid: [(ref.docids[d], s) for d, s in ref.search(lx, k)] for qid, lx in qlex.items()}


def gpuir_topk(index, query_table, k=10, mode="bmw"):
    """{qid: [(ctid_tuple, score)]} from gpuir_search, in gpuir's order."""
    out = {}
    for (qid,) in bl.copy_out("SELECT qid FROM %s" % query_table):
        out[qid] = []
    rows = bl.copy_out(
        "SELECT q.qid, s.ctid, s.score, s.rank FROM %s q CROSS JOIN LATERAL "
        "gpuir_search(%s::regclass, q.query, %d, %s) WITH ORDINALITY AS s(ctid, score, rank) "
        "ORDER BY q.qid, s.rank" % (query_table, bl.sql_literal(index), k, bl.sql_literal(mode)))
    for qid, ctid, score, _rank in rows:
        out[qid].append((bl.parse_ctid(ctid), float(score)))
    return out


def close(a, b, rel=1e-4):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-30)


def compare(ref, qlex, gp, k=10, rel=1e-4):
    """Compare reference top-k with gpuir top-k for every query.
    strict:   same documents in the same order, each score within rel.
    tolerant: same number of results, gpuir's i-th score within rel of the reference
              i-th score, and the reference score of gpuir's i-th document within rel of
              gpuir's score (i.e. differences only among near-tied documents)."""
    ctid_to_docno = {bl.parse_ctid(c): i for i, c in enumerate(ref.ctids)}
    strict = tolerant = 0
    bad = []
    for qid in sorted(qlex, key=lambda q: (len(q), q)):
        r = ref.search(qlex[qid], k)
        g = gp.get(qid, [])
        # full reference score of every doc gpuir returned
        refscore = {}
        for ctid, _ in g:
            d = ctid_to_docno.get(ctid)
            refscore[ctid] = ref.score(d, qlex[qid]) if d is not None else 0.0
        g_docnos = [ctid_to_docno.get(c, -1) for c, _ in g]
        ok_strict = (len(r) == len(g) and all(
            rd == gd and close(rs, gs, rel) for (rd, rs), gd, (_, gs) in zip(r, g_docnos, g)))
        ok_tol = (len(r) == len(g) and all(
            close(rs, gs, rel) and close(refscore[c], gs, rel) for (_, rs), (c, gs) in zip(r, g)))
        strict += ok_strict
        tolerant += ok_tol
        if not ok_tol:
            bad.append((qid, r, g, refscore))
    return strict, tolerant, bad


def report_compare(ref, qlex, gp, label, k=10, rel=1e-4, show=3):
    strict, tolerant, bad = compare(ref, qlex, gp, k, rel)
    n = len(qlex)
    bl.log("  reference check %s: top-%d agrees for %d/%d queries exactly, %d/%d up to near-ties "
           "(scores within %g relative)" % (label, k, strict, n, tolerant, n, rel))
    for qid, r, g, refscore in bad[:show]:
        bl.log("    MISMATCH qid %s lexemes=%s" % (qid, sorted(set(qlex[qid]))))
        for i in range(max(len(r), len(g))):
            rs = "%s %-10s %.6f" % (ref.ctids[r[i][0]], ref.docids[r[i][0]], r[i][1]) if i < len(r) else "-"
            gs = "(%d,%d) %.6f [ref %.6f]" % (g[i][0] + (g[i][1], refscore[g[i][0]])) if i < len(g) else "-"
            bl.log("      %2d ref %-38s gpuir %s" % (i + 1, rs, gs))
    return strict, tolerant, n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="english")
    ap.add_argument("--k1", type=float, default=0.9)
    ap.add_argument("--b", type=float, default=0.4)
    ap.add_argument("--dataset", default="scifact", choices=sorted(bl.DATASETS))
    ap.add_argument("--datasets-dir", default=bl.DEFAULT_DATASETS)
    ap.add_argument("--doc-table", default=None, help="default <dataset>_docs")
    ap.add_argument("--query-table", default=None, help="default <dataset>_queries")
    ap.add_argument("--load", action="store_true", help="(re)create and load the two tables first")
    ap.add_argument("--index", default=None, help="gpuir index to compare with (top-10, bmw)")
    ap.add_argument("--mode", default="bmw")
    ap.add_argument("--tsvector-tf", action="store_true",
                    help="keep the capped tsvector counts (do not recount capped documents)")
    args = ap.parse_args()

    ds = bl.DATASETS[args.dataset](args.datasets_dir)
    if not ds.available():
        bl.log("datasets folder %s not found: skipping" % ds.dir)
        return 0
    dt = args.doc_table or ds.name + "_docs"
    qt = args.query_table or ds.name + "_queries"
    if args.load:
        load_tables(ds, dt, qt)
    with bl.Timer("reference: fetch to_tsvector + build"):
        ref = ReferenceBM25(dt, args.config, args.k1, args.b, not args.tsvector_tf)
    bl.log("  reference stats: %s" % ref.stats())
    qlex = query_lexemes(qt, args.config)
    with bl.Timer("reference: %d queries, depth 1000" % len(qlex)):
        run = reference_run(ref, qlex, 1000)
    m, n = bl.evaluate(run, ds.qrels())
    bl.log("  reference BM25 on %s (%d judged queries): %s" % (
        ds.name, n, ", ".join("%s %.4f" % (k, m[k]) for k in ds.metrics)))
    if args.index:
        gp = gpuir_topk(args.index, qt, 10, args.mode)
        strict, tol, n = report_compare(ref, qlex, gp, "%s/%s" % (ds.name, args.mode))
        return 0 if tol == n else 1
    return 0


def load_tables(ds, doc_table, query_table):
    """(Re)create doc_table(id text, body text) and query_table(qid text, query text) and COPY."""
    bl.psql("DROP TABLE IF EXISTS %s; DROP TABLE IF EXISTS %s; "
            "CREATE TABLE %s (id text, body text); CREATE TABLE %s (qid text, query text)"
            % (doc_table, query_table, doc_table, query_table))
    bl.copy_in(doc_table, ds.docs())
    bl.copy_in(query_table, ds.topics())
    bl.psql("ANALYZE %s; ANALYZE %s" % (doc_table, query_table))


if __name__ == "__main__":
    sys.exit(main())
