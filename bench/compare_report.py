"""Tables and plots of bench/compare (and bench/engine_bench) results.

write(outdir) reads outdir/raw.json (bench/compare) and, when present,
outdir/engine.tsv (bench/engine_bench --out), writes outdir + '.md' (the
results page: tables, targets, commands, machine) and PNG plots in outdir
(gnuplot; skipped with a note when gnuplot is absent). Every figure of a
PostgreSQL peer or of gpuir is shown beside its ratio to GIN + ts_rank of the
same run: AND systems against gin-and, OR systems (or, wand, bmw, rum-or,
xapian-or) against gin-or.
"""

import json
import os
import shutil
import subprocess


def op_of(system):
    return "and" if system.endswith("-and") else "or"


def fmt_s(x):
    return "-" if x is None else ("%.1f" % x if x >= 10 else "%.2f" % x)


def fmt_ms(x):
    if x is None:
        return "-"
    return "%.3f" % x if x < 1 else ("%.2f" % x if x < 100 else "%.0f" % x)


def fmt_ratio(x):
    if x is None:
        return "-"
    return "%.2fx" % x if x < 10 else "%.1fx" % x


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def systems_of(res):
    seen = []
    for key in res.get("latency", {}):
        s = key.split("|")[0]
        if s not in seen:
            seen.append(s)
    order = {"gin": 0, "rum": 1, "xapian": 2, "gpuir": 3}
    return sorted(seen, key=lambda s: (order.get(s.split("-")[0], 9), s.count("-"), s))


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


def build_table(res):
    b, s = res.get("build", {}), res.get("size", {})
    tsv = b.get("tsvector")
    gin_build = (tsv or 0) + b.get("gin_index", 0)
    rows = []
    entries = [("GIN + ts_rank", gin_build, s.get("gin"), "tsvector column + CREATE INDEX USING gin"),
               ("RUM", (tsv or 0) + b["rum_index"] if "rum_index" in b else None, s.get("rum"),
                "tsvector column + CREATE INDEX USING rum (rum_tsvector_ops)"),
               ("Xapian", (tsv or 0) + b["xapian_index"] if "xapian_index" in b else None, s.get("xapian"),
                "tsvector column + lexeme export + Xapian indexing"),
               ("gpuir", b.get("gpuir_index"), s.get("gpuir"), "CREATE INDEX USING gpuir on the text")]
    for name, t, size, what in entries:
        if t is None and size is None:
            continue
        rows.append([name, fmt_s(t), fmt_ratio(ratio(t, gin_build)),
                     "%.1f" % (size / 1e6) if size else "-", fmt_ratio(ratio(size, s.get("gin"))), what])
    return md_table(["system", "build s", "vs GIN", "index MB", "vs GIN", "what is timed"], rows)


def latency_tables(res):
    lat = res.get("latency", {})
    ks = sorted({int(k.split("|")[2]) for k in lat})
    logs = sorted({k.split("|")[1] for k in lat})
    out = []
    for k in ks:
        for lg in logs:
            rows = []
            for s in systems_of(res):
                e = lat.get("%s|%s|%d" % (s, lg, k))
                if not e:
                    continue
                base = lat.get("gin-%s|%s|%d" % (op_of(s), lg, k))
                rows.append([s, fmt_ms(e["p50"]), fmt_ms(e["p95"]), fmt_ms(e["p99"]), fmt_ms(e["mean"]),
                             fmt_ratio(ratio(base["p50"], e["p50"]) if base else None),
                             fmt_ratio(ratio(base["mean"], e["mean"]) if base else None)])
            out.append("**%s, k = %d** (%d queries; ms; speed-up = GIN time / system time, same AND/OR)\n\n"
                       % (lg, k, rows and lat["%s|%s|%d" % (rows[0][0], lg, k)]["n"] or 0)
                       + md_table(["system", "p50", "p95", "p99", "mean", "p50 speed-up", "mean speed-up"], rows))
    return "\n\n".join(out)


def throughput_table(res):
    thr = res.get("throughput", {})
    clients = sorted({int(k.split("|")[1]) for k in thr})
    rows = []
    for s in systems_of(res):
        row = [s]
        for c in clients:
            e = thr.get("%s|%d" % (s, c))
            base = thr.get("gin-%s|%d" % (op_of(s), c))
            if not e:
                row.append("-")
                continue
            row.append("%.0f (%s)" % (e["qps"], fmt_ratio(ratio(e["qps"], base["qps"]) if base else None)))
        rows.append(row)
    return md_table(["system"] + ["%d client%s q/s (vs GIN)" % (c, "" if c == 1 else "s") for c in clients], rows)


def engine_rows(outdir):
    """bench/engine_bench's TSV (--out): header row, then one row per
    (log, mode, k, batch)."""
    path = os.path.join(outdir, "engine.tsv")
    if not os.path.exists(path):
        return None, None
    with open(path) as f:
        lines = [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("#")]
    if not lines:
        return None, None
    return lines[0], lines[1:]


ENGINE_COLUMNS = [("log", "log", str), ("mode", "mode", str), ("k", "k", str), ("batch", "batch", str),
                  ("queries_per_s", "queries/s", lambda x: "%.0f" % float(x)),
                  ("batch_ms", "ms per batch", lambda x: fmt_ms(float(x))),
                  ("postings_per_s", "M postings/s", lambda x: "%.0f" % (float(x) / 1e6)),
                  ("payload_GBps", "block GB/s", lambda x: "%.1f" % float(x)),
                  ("pct_copy_rw", "% of copy bw", lambda x: "%.2f" % float(x)),
                  ("bmw_over_or", "BMW/OR", str), ("note", "note", str)]


def engine_table(head, rows):
    ih = {h: i for i, h in enumerate(head)}
    cols = [c for c in ENGINE_COLUMNS if c[0] in ih]
    out = []
    for r in rows:
        line = []
        for key, _title, f in cols:
            v = r[ih[key]] if ih[key] < len(r) else ""
            try:
                line.append(f(v) if v not in ("", "-") else "-")
            except ValueError:
                line.append(v)
        out.append(line)
    return md_table([c[1] for c in cols], out)


def targets(res, outdir):
    thr = res.get("throughput", {})
    out = []

    def q(s, c):
        e = thr.get("%s|%d" % (s, c))
        return e["qps"] if e else None

    r = ratio(q("gpuir-cpu-bmw", 1), q("gin-or", 1))
    out.append(["gpuir CPU bmw q/s vs GIN + ts_rank, OR queries, k = 10, 1 client", ">= 20x", fmt_ratio(r),
                "-" if r is None else ("MET" if r >= 20 else "NOT MET")])
    r = ratio(q("gpuir-cpu-and", 1), q("gin-and", 1))
    out.append(["gpuir CPU and q/s vs GIN + ts_rank, AND queries, k = 10, 1 client", ">= 5x", fmt_ratio(r),
                "-" if r is None else ("MET" if r >= 5 else "NOT MET")])
    s = res.get("size", {})
    r = ratio(s.get("gpuir"), s.get("gin"))
    out.append(["gpuir index size vs GIN index", "<= 1x", fmt_ratio(r),
                "-" if r is None else ("MET" if r <= 1 else "NOT MET")])
    batches = res.get("gpu_batches")
    if batches:
        for mode in ("bmw", "or"):
            best = max((b["qps"] for b in batches if b["mode"] == mode and b["k"] == 10), default=None)
            cpu16 = q("gpuir-cpu-%s" % mode, 16)
            r = ratio(best, cpu16)
            out.append(["GPU batched %s (best batch) vs CPU engine with 16 backends, k = 10" % mode, ">= 10x",
                        fmt_ratio(r), "-" if r is None else ("MET" if r >= 10 else "NOT MET")])
    head, rows = engine_rows(outdir)
    if head and "pct_copy_rw" in head:
        i_m, i_p = head.index("mode"), head.index("pct_copy_rw")
        best = max((float(r[i_p]) for r in rows if r[i_m] == "or" and r[i_p]), default=None)
        if best is not None:
            out.append(["engine-level exhaustive OR, share of the card's copy bandwidth", ">= 30%",
                        "%.1f%%" % best, "MET" if best >= 30 else "NOT MET"])
    return md_table(["target", "goal", "measured", "status"], out)


def gnuplot(script, outdir):
    if not shutil.which("gnuplot"):
        return False
    p = subprocess.run(["gnuplot"], input=script, cwd=outdir, universal_newlines=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        print("gnuplot failed:", p.stderr[-1000:])
        return False
    return True


def plot_latency(res, outdir, op):
    lat = res.get("latency", {})
    series = []
    for s in systems_of(res):
        if op_of(s) != op:
            continue
        e = lat.get("%s|trec05|10" % s)
        if not e or not e.get("ms_all"):
            continue
        fn = "lat-%s.dat" % s
        v = sorted(e["ms_all"])
        with open(os.path.join(outdir, fn), "w") as f:
            for i, x in enumerate(v):
                f.write("%g %g\n" % (max(x, 1e-3), (i + 1) / len(v)))
        series.append((s, fn))
    if not series:
        return None
    png = "latency-%s.png" % op
    script = ("set terminal pngcairo size 900,560 font ',10'\nset output '%s'\n"
              "set title 'Latency distribution, %s queries, TREC 2005 sample, k = 10, one client (%s)'\n"
              "set logscale x\nset xlabel 'latency per query (ms, log scale)'\nset ylabel 'fraction of queries'\n"
              "set key bottom right\nset grid\n" % (png, op.upper(), res.get("machine")))
    script += "plot " + ", ".join("'%s' using 1:2 with lines lw 2 title '%s'" % (fn, s) for s, fn in series) + "\n"
    return png if gnuplot(script, outdir) else None


def plot_throughput(res, outdir):
    thr = res.get("throughput", {})
    series = []
    for s in systems_of(res):
        pts = sorted((int(k.split("|")[1]), v["qps"]) for k, v in thr.items() if k.split("|")[0] == s)
        if not pts:
            continue
        fn = "thr-%s.dat" % s
        with open(os.path.join(outdir, fn), "w") as f:
            for c, x in pts:
                f.write("%d %g\n" % (c, x))
        series.append((s, fn))
    if not series:
        return None
    png = "throughput.png"
    script = ("set terminal pngcairo size 900,560 font ',10'\nset output '%s'\n"
              "set title 'Throughput against clients (pgbench, TREC 2005 sample, k = 10; %s)'\n"
              "set logscale y\nset logscale x 2\nset xlabel 'clients'\nset ylabel 'queries/s (log scale)'\n"
              "set key outside right\nset grid\n" % (png, res.get("machine")))
    script += "plot " + ", ".join("'%s' using 1:2 with linespoints lw 2 title '%s'" % (fn, s)
                                  for s, fn in series) + "\n"
    return png if gnuplot(script, outdir) else None


def plot_batches(points, outdir, png, title):
    """points: {(mode, k): [(batch, qps)]}"""
    series = []
    for (mode, k), pts in sorted(points.items()):
        fn = "batch-%s-%s-%d.dat" % (png.split(".")[0], mode, k)
        with open(os.path.join(outdir, fn), "w") as f:
            for b, x in sorted(pts):
                f.write("%d %g\n" % (b, x))
        series.append(("%s k=%d" % (mode, k), fn))
    if not series:
        return None
    script = ("set terminal pngcairo size 900,560 font ',10'\nset output '%s'\nset title '%s'\n"
              "set logscale xy\nset xlabel 'queries per batch'\nset ylabel 'queries/s'\n"
              "set key outside right\nset grid\n" % (png, title))
    script += "plot " + ", ".join("'%s' using 1:2 with linespoints lw 2 title '%s'" % (fn, t)
                                  for t, fn in series) + "\n"
    return png if gnuplot(script, outdir) else None


def write(outdir):
    outdir = os.path.abspath(outdir)
    with open(os.path.join(outdir, "raw.json")) as f:
        res = json.load(f)
    rel = os.path.basename(outdir)
    md = []
    md.append("# gpuir benchmark: %s, %s\n" % (res.get("date"), res.get("machine")))
    cmds = res.get("commands") or [res.get("command", "bench/compare")]
    md.append("Produced by bench/compare (the page is regenerated from `%s/raw.json` by "
              "`bench/compare --report bench/results/%s`). Every ratio is against PostgreSQL GIN + ts_rank "
              "measured in the same run. Commands:\n\n```\n%s\n```\n"
              % (rel, rel, "\n".join(cmds)))
    md.append("## Machine and versions\n")
    md.append(md_table(["", ""], [
        ["CPU", "%s, %s cores" % (res.get("cpu"), res.get("cores"))],
        ["GPU", res.get("gpu") or "none"],
        ["PostgreSQL", res.get("postgres")],
        ["RUM", res.get("rum_version") or "not installed"],
        ["Xapian", res.get("xapian_version") or "not installed"],
        ["BM25", "k1 = %g, b = %g (gpuir and Xapian); ts_rank and RUM use their own ranking" % (
            res.get("k1"), res.get("b"))],
    ]))
    logs = res.get("logs", {})
    md.append("\n## Corpus and queries\n")
    md.append("Wikipedia 2015 (`%s`) split into paragraphs: **%d documents kept** (every non-empty "
              "paragraph line; titles dropped), %.0f MB of text. gpuir index: %s postings, %s terms, "
              "%.2f bytes per posting, %s segment(s).\n" % (
                  ", ".join(res.get("parts", [])), res.get("docs", 0), res.get("text_bytes", 0) / 1e6,
                  "{:,}".format(res.get("gpuir_info", {}).get("postings", 0)),
                  "{:,}".format(res.get("gpuir_info", {}).get("terms", 0)),
                  res.get("gpuir_info", {}).get("bytes_per_posting", 0),
                  res.get("gpuir_info", {}).get("segments", "?")))
    md.append(md_table(["log", "queries with lexemes", "sampled", "lexemes per query"],
                       [[lg, "{:,}".format(v["usable"]), v["sample"], v["avg_terms"]] for lg, v in sorted(logs.items())]))
    md.append("\nQueries are tokenized by `to_tsvector('english', query)`; AND = `plainto_tsquery`, "
              "OR = the lexemes joined by `|`; gpuir gets the query text and tokenizes it with the same "
              "configuration. Latency is measured in the server around each query (planning included) in a "
              "PL/pgSQL loop, after one untimed pass; Xapian's around `get_mset` in C++. Throughput: pgbench, "
              "one query of the TREC 2005 sample per transaction through a PL/pgSQL function (the same "
              "function for every system), %s s per point; Xapian: threads with their own database handle.\n"
              % res.get("args", {}).get("duration"))
    md.append("## Targets\n")
    md.append(targets(res, outdir))
    md.append("\n## Build time and index size\n")
    md.append(build_table(res))
    md.append("\nThe tsvector column that GIN, RUM and Xapian need took %s s and adds %.0f MB to the table "
              "(gpuir needs no such column).\n" % (fmt_s(res.get("build", {}).get("tsvector")),
                                                     res.get("size", {}).get("tsv_column", 0) / 1e6))
    md.append("## Throughput (queries/s, k = 10)\n")
    md.append(throughput_table(res))
    png = plot_throughput(res, outdir)
    if png:
        md.append("\n![throughput](%s/%s)\n" % (rel, png))
    md.append("\n## Latency per query, one client\n")
    md.append(latency_tables(res))
    for op in ("or", "and"):
        png = plot_latency(res, outdir, op)
        if png:
            md.append("\n![latency %s](%s/%s)\n" % (op, rel, png))
    md.append("\n## Sanity: same matches\n")
    san = res.get("sanity", {})
    if san:
        md.append("Fraction of queries (k = 10) where gpuir's top-k (`and`, `bmw`) equals GIN's candidate "
                  "set (the rows `tsv @@ q`) re-ranked by BM25 in plain SQL (df from ts_stat, dl from the "
                  "tsvector; equal up to float ties at the k-th score):\n")
        md.append(md_table(["query kind / log", "equal", "fraction"],
                           [[k, "%d / %d" % (v["agree"], v["total"]),
                             "%.3f" % (v["agree"] / v["total"]) if v["total"] else "-"]
                            for k, v in sorted(san.items())]))
    agree = res.get("mode_agreement", {})
    if agree:
        bad = sum(1 for v in agree.values() if v[0] != v[1])
        tot = sum(v[1] for v in agree.values())
        md.append("\ngpuir `wand` and `bmw` against exhaustive `or`, and `gpu` / `auto` against `cpu` where measured, on every latency query (%d comparisons): "
                  "%s.\n" % (tot, "all identical" if not bad else "%d configurations differ" % bad))
    if res.get("gpu_batches"):
        md.append("\n## GPU: batched throughput through SQL (`gpuir_search_batch`, gpuir.device = gpu)\n")
        rows = [[b["mode"], b["k"], b["batch"], "%.0f" % b["qps"], fmt_ms(b["batch_ms"])]
                for b in res["gpu_batches"]]
        md.append(md_table(["mode", "k", "batch", "queries/s", "ms per batch"], rows))
        pts = {}
        for b in res["gpu_batches"]:
            pts.setdefault((b["mode"], b["k"]), []).append((b["batch"], b["qps"]))
        png = plot_batches(pts, outdir, "gpu-batch-sql.png",
                           "gpuir_search_batch through the GPU service (%s)" % res.get("machine"))
        if png:
            md.append("\n![gpu batch](%s/%s)\n" % (rel, png))
    if res.get("round_trip"):
        md.append("\n## SQL round trip through the GPU service (pgbench, k = 10)\n")
        rows = []
        for key, v in sorted(res["round_trip"].items()):
            dev, mode, c = key.split("|")
            lat = v.get("latency") or {}
            rows.append([dev, mode, c, "%.0f" % v["qps"], fmt_ms(lat.get("p50")), fmt_ms(lat.get("p99")),
                         v.get("failed", 0)])
        md.append(md_table(["gpuir.device", "mode", "clients", "queries/s", "p50 ms", "p99 ms", "failed"], rows))
    head, rows = engine_rows(outdir)
    if head:
        md.append("\n## Engine level at Gov2 scale (generated corpus, no PostgreSQL)\n")
        meta = os.path.join(outdir, "engine.txt")
        if os.path.exists(meta):
            with open(meta) as f:
                lines = f.read().split("\n")
            # the setup and exactness part; the timing grid is the table below
            cut = next((i for i, l in enumerate(lines) if l.startswith("timing grid")), len(lines))
            md.append("```\n" + "\n".join(lines[:cut]).strip() + "\n```\n")
        md.append(engine_table(head, rows))
        pts = {}
        ih = {h: i for i, h in enumerate(head)}
        if "queries_per_s" in ih and "batch" in ih:
            for r in rows:
                if "trec05" in r[ih["log"]] and r[ih["queries_per_s"]] not in ("", "-"):
                    pts.setdefault((r[ih["mode"]], int(r[ih["k"]])), []).append(
                        (int(r[ih["batch"]]), float(r[ih["queries_per_s"]])))
            png = plot_batches(pts, outdir, "gpu-batch-engine.png",
                               "engine level, generated Gov2-scale corpus, TREC 2005 queries")
            if png:
                md.append("\n![engine batch](%s/%s)\n" % (rel, png))
    path = outdir + ".md"
    with open(path, "w") as f:
        f.write("\n".join(md) + "\n")
    print("results page: %s" % path)
