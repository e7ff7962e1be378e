"""Shared helpers for the gpuir benches (python3 standard library only).

- dataset readers for ../shared/datasets (SciFact, CACM)
- psql helpers (COPY in / COPY out through a psql subprocess)
- trec_eval-compatible metrics (ndcg_cut_10, map, recall_100, P_30)
- process_kind: a server process's kind from its ps display (bench/host-cpu,
  bench/sampler-report)

Nothing from the datasets is ever written into the repository: documents are
streamed from the archives straight into psql.
"""

import gzip
import html
import json
import math
import os
import re
import subprocess
import tarfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
DEFAULT_DATASETS = os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "datasets"))


def log(msg=""):
    print(msg, flush=True)


def process_kind(cmd):
    """the kind of a process from its command line (a PostgreSQL process's ps
    display): backend (a client's session), gpuir worker (gpuir gpu service),
    gpuir reader (gpuir list reader), postgres other (checkpointer, walwriter,
    ...), pgbench, other"""
    if cmd.startswith("postgres: "):
        if "gpuir gpu service" in cmd:
            return "gpuir worker"
        if "gpuir list reader" in cmd:
            return "gpuir reader"
        # a session: "postgres: USER DB [local] STATE" or "... HOST(PORT) STATE"
        words = cmd.split()
        if len(words) >= 4 and (words[3] == "[local]" or "(" in words[3]):
            return "backend"
        return "postgres other"
    if "pgbench" in cmd.split(" ")[0]:
        return "pgbench"
    return "other"


class Timer:
    """with Timer("load scifact"): ...  -> prints '  [time] load scifact: 1.23 s'"""

    def __init__(self, what, quiet=False):
        self.what = what
        self.quiet = quiet
        self.elapsed = 0.0

    def __enter__(self):
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *exc):
        self.elapsed = time.monotonic() - self.t0
        if not self.quiet and exc[0] is None:
            log("  [time] %-52s %8.2f s" % (self.what, self.elapsed))
        return False


# ---------------------------------------------------------------------------
# COPY text format
# ---------------------------------------------------------------------------

_COPY_ESC = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\0": ""})
_COPY_UNESC_RE = re.compile(r"\\(.)")
_COPY_UNESC_MAP = {"t": "\t", "n": "\n", "r": "\r", "\\": "\\", "b": "\b", "f": "\f", "v": "\v"}


def copy_escape(s):
    return s.translate(_COPY_ESC)


def copy_unescape(s):
    if "\\" not in s:
        return s
    return _COPY_UNESC_RE.sub(lambda m: _COPY_UNESC_MAP.get(m.group(1), m.group(1)), s)


def sql_literal(s):
    return "'" + s.replace("'", "''") + "'"


def sql_ident(s):
    return '"' + s.replace('"', '""') + '"'


# ---------------------------------------------------------------------------
# psql
# ---------------------------------------------------------------------------

PSQL = ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"]


class PsqlError(RuntimeError):
    pass


def psql(sql, stdin_data=None):
    """Run one psql -c command; return stdout (str). Raises PsqlError on failure."""
    p = subprocess.run(PSQL + ["-c", sql], input=stdin_data, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        raise PsqlError("psql failed (rc=%d) for: %s\n%s" % (p.returncode, sql[:300], p.stderr.strip()))
    return p.stdout


def psql_script(script):
    """Run a multi-statement script through psql -f - ; return stdout."""
    p = subprocess.run(PSQL + ["-f", "-"], input=script, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        raise PsqlError("psql script failed (rc=%d):\n%s" % (p.returncode, p.stderr.strip()))
    return p.stdout


def copy_in(table, rows):
    """COPY rows (iterable of tuples of str) into table through psql's stdin."""
    data = "".join("\t".join(copy_escape(c) for c in r) + "\n" for r in rows)
    psql("COPY %s FROM STDIN" % table, stdin_data=data)


def copy_out(select_sql):
    """COPY (select) TO STDOUT; yields lists of unescaped column strings."""
    out = psql("COPY (%s) TO STDOUT" % select_sql)
    for line in out.split("\n"):
        if line:
            yield [copy_unescape(c) for c in line.split("\t")]


def parse_ctid(s):
    """'(12,3)' -> (12, 3), which sorts in ctid order."""
    a, b = s.strip("()").split(",")
    return (int(a), int(b))


# ---------------------------------------------------------------------------
# datasets
# ---------------------------------------------------------------------------

class Dataset:
    name = None
    published = {}      # metric -> published Anserini figure
    targets = {}        # metric -> allowed |difference|

    def __init__(self, root):
        self.dir = os.path.join(root, self.name)

    def available(self):
        return os.path.isdir(self.dir)

    def docs(self):
        """yields (docid, body)"""
        raise NotImplementedError

    def topics(self):
        """returns list of (qid, query)"""
        raise NotImplementedError

    def qrels(self):
        """returns {qid: {docid: rel}} (rel > 0 only: the relevant documents)"""
        raise NotImplementedError


def read_trec_qrels(path):
    qrels = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 4:
                continue
            qid, _, docid, rel = parts[:4]
            rel = int(rel)
            if rel > 0:
                qrels.setdefault(qid, {})[docid] = rel
    return qrels


class SciFact(Dataset):
    name = "scifact"
    published = {"nDCG@10": 0.6789, "R@100": 0.9253, "R@1000": 0.9767}
    targets = {"nDCG@10": 0.015}
    metrics = ["nDCG@10", "R@100", "R@1000", "MAP"]

    def docs(self):
        for docid, title, text in self.fields():
            yield (docid, title + " " + text)

    def fields(self):
        """(id, title, text): the two fields docs() joins, for weighted indexes"""
        with gzip.open(os.path.join(self.dir, "corpus.jsonl.gz"), "rt", encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                o = json.loads(line)
                yield (str(o["_id"]), o.get("title") or "", o.get("text") or "")

    def topics(self):
        out = []
        with gzip.open(os.path.join(self.dir, "topics.beir-v1.0.0-scifact.test.tsv.gz"),
                       "rt", encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line:
                    continue
                qid, query = line.split("\t", 1)
                out.append((qid.strip(), query))
        return out

    def qrels(self):
        return read_trec_qrels(os.path.join(self.dir, "qrels.beir-v1.0.0-scifact.test.txt"))


class CACM(Dataset):
    name = "cacm"
    published = {"MAP": 0.3123, "P@30": 0.1942}
    targets = {"MAP": 0.02}
    metrics = ["MAP", "P@30", "nDCG@10", "R@100"]

    _pre = re.compile(r"<pre>(.*)</pre>", re.S | re.I)

    def docs(self):
        with tarfile.open(os.path.join(self.dir, "cacm.tar.gz"), "r:gz") as tf:
            for m in tf:
                if not m.isfile() or not m.name.endswith(".html"):
                    continue
                raw = tf.extractfile(m).read().decode("utf-8", errors="replace")
                mm = self._pre.search(raw)
                text = mm.group(1) if mm else raw
                docid = os.path.basename(m.name)[:-len(".html")]
                yield (docid, html.unescape(text))

    def topics(self):
        with open(os.path.join(self.dir, "topics.cacm.txt"), encoding="utf-8") as f:
            raw = f.read()
        out = []
        for m in re.finditer(r"<DOCNO>\s*(\S+)\s*</DOCNO>(.*?)</DOC>", raw, re.S):
            out.append((m.group(1), " ".join(m.group(2).split())))
        return out

    def qrels(self):
        return read_trec_qrels(os.path.join(self.dir, "qrels.cacm.txt"))


DATASETS = {"scifact": SciFact, "cacm": CACM}


# ---------------------------------------------------------------------------
# metrics (trec_eval semantics)
# ---------------------------------------------------------------------------

def trec_order(results):
    """results: list of (docid, score). trec_eval ignores the rank column and sorts
    by score descending, ties by docid descending (strcmp); dedupe docids."""
    seen = set()
    uniq = []
    for d, s in results:
        if d not in seen:
            seen.add(d)
            uniq.append((d, s))
    uniq.sort(key=lambda x: x[0], reverse=True)
    uniq.sort(key=lambda x: x[1], reverse=True)   # stable: keeps docid-desc inside ties
    return [d for d, _ in uniq]


def query_metrics(ranked, rel, depth=1000):
    """ranked: docids best first; rel: {docid: gain>0}. Returns dict of metrics."""
    ranked = ranked[:depth]
    nrel = len(rel)
    m = {}
    # nDCG@10 (trec_eval ndcg_cut_10: gain = judged relevance, discount log2(rank+1))
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(rel.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    m["nDCG@10"] = dcg / idcg if idcg > 0 else 0.0
    # AP (cut at depth), divided by the number of relevant docs in the qrels
    hits = 0
    ap = 0.0
    for i, d in enumerate(ranked):
        if d in rel:
            hits += 1
            ap += hits / (i + 1)
    m["MAP"] = ap / nrel if nrel else 0.0
    for k in (100, 1000):
        m["R@%d" % k] = sum(1 for d in ranked[:k] if d in rel) / nrel if nrel else 0.0
    m["P@10"] = sum(1 for d in ranked[:10] if d in rel) / 10.0
    m["P@30"] = sum(1 for d in ranked[:30] if d in rel) / 30.0
    return m


def evaluate(run, qrels, depth=1000, tie_order="trec"):
    """run: {qid: [(docid, score), ...] in engine rank order}; qrels: {qid: {docid: rel}}.
    Averages over every judged query (queries with no results score 0).
    tie_order 'trec' re-sorts like trec_eval; 'engine' keeps the engine's order."""
    sums = {}
    judged = [q for q in qrels if qrels[q]]
    for qid in judged:
        res = run.get(qid, [])
        ranked = trec_order(res) if tie_order == "trec" else [d for d, _ in res]
        for k, v in query_metrics(ranked, qrels[qid], depth).items():
            sums[k] = sums.get(k, 0.0) + v
    n = len(judged)
    return {k: v / n for k, v in sums.items()}, n


# ---------------------------------------------------------------------------
# Wikipedia paragraphs and query logs (bench/compare, bench/writes)
# ---------------------------------------------------------------------------

def wiki_paragraphs(paths, max_docs):
    n = 0
    for path in paths:
        # archive order: sorting the members would make tarfile seek back in
        # the xz stream and decompress it again for every member
        with tarfile.open(path, "r|xz") as tar:
            for m in tar:
                if not m.isfile():
                    continue
                title_next = False
                for line in tar.extractfile(m).read().decode("utf-8", "replace").split("\n"):
                    if line.startswith("<doc "):
                        title_next = True
                        continue
                    if title_next:
                        title_next = False
                        continue
                    if not line.strip() or line.startswith("</doc>"):
                        continue
                    n += 1
                    yield line
                    if max_docs and n >= max_docs:
                        return


def copy_stream(table, lines):
    """COPY already escaped lines (no newline) into table through psql's stdin."""
    p = subprocess.Popen(PSQL + ["-c", "COPY %s FROM STDIN" % table], stdin=subprocess.PIPE,
                         universal_newlines=True, encoding="utf-8")
    buf = []
    for line in lines:
        buf.append(line + "\n")
        if len(buf) >= 10000:
            p.stdin.write("".join(buf))
            buf = []
    p.stdin.write("".join(buf))
    p.stdin.close()
    if p.wait() != 0:
        raise PsqlError("COPY into %s failed" % table)


def read_log(path, kind):
    """The (qid, query) pairs of a query log (gzip'd when path ends in .gz):
    kind "tab" (qid<TAB>query), "colon" (qid:query, the TREC efficiency
    topics), "colon2" (qid:x:query, MQ 2009), or "auto" ("qid:query" where
    the part before the first colon is a number, else the line is the query,
    numbered by its line).  Lines without a query are left out."""
    out = []
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if kind == "auto":
                # "qid:query" (the TREC efficiency topics), else a query a line numbered from 1
                head, sep, rest = line.partition(":")
                qid, q = (head, rest) if sep and head.strip().isdigit() else (str(n), line)
            elif kind == "tab":
                qid, _, q = line.partition("\t")
            elif kind == "colon":
                qid, _, q = line.partition(":")
            else:
                parts = line.split(":", 2)
                if len(parts) < 3:
                    continue
                qid, q = parts[0], parts[2]
            q = q.replace("\t", " ").replace("\\", " ").strip()
            if qid and q:
                out.append((qid.strip(), q))
    return out
