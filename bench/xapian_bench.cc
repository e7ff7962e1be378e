// xapian_bench -- the Xapian peer of bench/compare.
//
// gpuir is compared with PostgreSQL's GIN + ts_rank, with RUM, and with a
// dedicated search engine outside PostgreSQL: Xapian 1.4.  This program is the
// Xapian side.  It does no tokenizing of its own: the documents and queries
// are tokenized once by PostgreSQL (to_tsvector('english')) and the resulting
// lexemes are indexed and searched verbatim (no TermGenerator, no stemmer, no
// prefixes), so that every system sees exactly the same terms.
//
// Build (Debian 12, libxapian-dev), from the repository root:
//
//   g++ -O2 -std=c++17 -Wall -Wextra bench/xapian_bench.cc $(xapian-config --cxxflags --libs) -pthread -o build/xapian_bench
//
// Usage:
//
//   xapian_bench build DBDIR [--commit-every N] [--skip-empty] < docs.tsv
//   xapian_bench query DBDIR --k K --op and|or [--k1 0.9] [--b 0.4]
//                [--min-normlen 0.5] < queries.tsv
//   xapian_bench throughput DBDIR --k K --op and|or --threads N --seconds S
//                [--k1 0.9] [--b 0.4] [--min-normlen 0.5] < queries.tsv
//   xapian_bench --help
//
// Options take their value as the next argument or after '=' (--k=10).
//
// Input formats (bytes are taken as they are; no unescaping of any kind):
//
//   docs.tsv     one document per line:  docid TAB lexeme:tf lexeme:tf ...
//                docid is an integer 1 .. 4294967295, unique in the file.
//                Tokens are separated by spaces; the tf is what follows the
//                LAST ':' of a token (a lexeme may itself contain ':'), an
//                integer >= 1.  The lexeme list may be empty (the TAB may be
//                missing too).  A lexeme repeated in a line adds up its tfs.
//   queries.tsv  one query per line:  qid TAB lexeme lexeme ...
//                qid is any non-empty string without TAB; lexemes are space
//                separated, may be none; a lexeme repeated in a query is kept
//                once.
//   Lexemes may contain any byte but TAB, space and newline.  Empty lines
//   are ignored.  A malformed line stops the program with its line number.
//
// Subcommands and output formats (stdout; errors go to stderr, exit status 1):
//
//   build       Creates (or overwrites) a Xapian database at DBDIR.  Every
//               document gets each lexeme with add_term(lexeme, tf), i.e.
//               wdf = tf, so its length is the sum of its tfs; it is stored
//               with replace_document(docid, doc) so that the Xapian docid is
//               our docid.  Lexemes longer than 240 bytes (Xapian's term
//               limit) are left out and counted.  Commits every N documents
//               (default 100000) and at the end.  With --skip-empty a
//               document without any (kept) lexeme is not stored: gpuir counts
//               only documents with length > 0 in N and avgdl, Xapian counts
//               every stored document.  Prints one line:
//                 docs=N terms_skipped=N seconds=S db_bytes=B
//               (docs = documents stored, seconds = wall time of the whole
//               build, db_bytes = size of the files under DBDIR once closed;
//               with --skip-empty an extra key empty_skipped=N at the end).
//   query       Runs every query once, in file order, on one Database and one
//               Enquire, and prints per query
//                 qid TAB microseconds TAB docid:weight,docid:weight,...
//               microseconds (printed %.1f) is the wall time of building the
//               Xapian::Query + set_query + get_mset(0, K) + reading the
//               docids and weights out of the MSet; weights are printed %.6g,
//               best first.  A query without lexemes prints an empty list.
//               The queries are read and parsed before the database is
//               opened; there is no warm-up run, so the first queries pay for
//               cold caches.
//   throughput  N threads, each with its own Database and Enquire (Xapian
//               objects are not thread safe), run the queries in a loop,
//               thread i starting at query i * nqueries / N and wrapping
//               around, until S seconds have elapsed (the clock is read after
//               every query).  Prints one line:
//                 threads=N seconds=S queries=Q qps=X
//               (seconds = the measured elapsed time, X = Q / seconds).
//
// Ranking: Xapian's BM25Weight (Robertson & Zaragoza), created as
// BM25Weight(k1, 0 /*k2*/, 1 /*k3*/, b, min_normlen), ties broken by docid
// ascending, the query is OP_AND or OP_OR of the distinct lexemes.  With
// k2 = 0 and every wqf = 1 (the k3 factor is then 1) a document scores
//
//   sum over matching t of  idf'(t) * (k1 + 1) * wdf / (wdf + k1 * (1 - b + b * L))
//
//   L      = max(doclen / avgdl, min_normlen)         (gpuir: doclen / avgdl)
//   idf'   = ln(w) with w = (N - df + 0.5) / (df + 0.5), and w replaced by
//            w / 2 + 1 when w < 2 (keeps it positive)
//                                            (gpuir: ln(1 + (N - df + 0.5) / (df + 0.5)))
//   N      = every document stored, empty ones included (gpuir: doclen > 0)
//   avgdl  = sum of the document lengths / N
//
// So Xapian's idf differs slightly from gpuir's and the rankings are
// comparable but not identical.  --min-normlen 0 makes the length part the
// same as gpuir's, and build --skip-empty makes N and avgdl the same.

#include <xapian.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

namespace {

const char *const PROG = "xapian_bench";

// Xapian's glass backend cannot store longer terms.
constexpr std::size_t MAX_TERM_BYTES = 240;

using Clock = std::chrono::steady_clock;

const char *const HELP_TEXT =
    "xapian_bench: the Xapian peer of bench/compare (BM25 over PostgreSQL's lexemes)\n"
    "\n"
    "usage:\n"
    "  xapian_bench build DBDIR [--commit-every N] [--skip-empty] < docs.tsv\n"
    "  xapian_bench query DBDIR --k K --op and|or [--k1 0.9] [--b 0.4]\n"
    "               [--min-normlen 0.5] < queries.tsv\n"
    "  xapian_bench throughput DBDIR --k K --op and|or --threads N --seconds S\n"
    "               [--k1 0.9] [--b 0.4] [--min-normlen 0.5] < queries.tsv\n"
    "  xapian_bench --help\n"
    "\n"
    "input:\n"
    "  docs.tsv     docid<TAB>lexeme:tf lexeme:tf ...   (tf after the last ':')\n"
    "  queries.tsv  qid<TAB>lexeme lexeme ...\n"
    "\n"
    "output:\n"
    "  build        docs=N terms_skipped=N seconds=S db_bytes=B [empty_skipped=N]\n"
    "  query        qid<TAB>microseconds<TAB>docid:weight,docid:weight,...\n"
    "  throughput   threads=N seconds=S queries=Q qps=X\n"
    "\n"
    "options:\n"
    "  --k K              results per query (top K)\n"
    "  --op and|or        all lexemes required / any lexeme\n"
    "  --k1 X, --b X      BM25 parameters (default 0.9, 0.4)\n"
    "  --min-normlen X    Xapian's lower bound of doclen/avgdl (default 0.5;\n"
    "                     0 = plain BM25 length normalization, as gpuir)\n"
    "  --threads N        throughput: threads, each with its own Database\n"
    "  --seconds S        throughput: how long to run\n"
    "  --commit-every N   build: commit every N documents (default 100000)\n"
    "  --skip-empty       build: do not store documents without lexemes\n"
    "\n"
    "Ranking is Xapian's BM25Weight(k1, 0, 1, b, min_normlen), ties by docid\n"
    "ascending; its idf differs slightly from gpuir's (see the source header).\n";

[[noreturn]] void die(const std::string &msg)
{
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", PROG, msg.c_str());
    std::exit(1);
}

[[noreturn]] void usage_error(const std::string &msg)
{
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n(try '%s --help')\n", PROG, msg.c_str(), PROG);
    std::exit(1);
}

// A short, printable rendering of some input bytes for error messages.
std::string show(const std::string &s)
{
    const std::size_t limit = 60;
    std::string out = "'";
    for (std::size_t i = 0; i < s.size() && i < limit; ++i) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c == '\r') {
            out += "\\r";
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    if (s.size() > limit) out += "...";
    out += "'";
    return out;
}

// Unsigned decimal integer, digits only, within [lo, hi]; false otherwise.
bool parse_uint(const std::string &s, unsigned long long lo, unsigned long long hi,
                unsigned long long &out)
{
    if (s.empty() || s.size() > 20) return false;
    unsigned long long v = 0;
    for (char ch : s) {
        if (ch < '0' || ch > '9') return false;
        unsigned digit = static_cast<unsigned>(ch - '0');
        if (v > (std::numeric_limits<unsigned long long>::max() - digit) / 10) return false;
        v = v * 10 + digit;
    }
    if (v < lo || v > hi) return false;
    out = v;
    return true;
}

// ---------------------------------------------------------------- options

struct Options {
    std::string command;
    std::string dbdir;
    Xapian::doccount k = 0;
    bool have_k = false;
    Xapian::Query::op op = Xapian::Query::OP_AND;
    bool have_op = false;
    double k1 = 0.9;
    double b = 0.4;
    double min_normlen = 0.5;
    unsigned threads = 0;
    double seconds = 0;
    unsigned long long commit_every = 100000;
    bool skip_empty = false;
};

unsigned long long option_uint(const std::string &name, const std::string &value,
                               unsigned long long lo, unsigned long long hi)
{
    unsigned long long v;
    if (!parse_uint(value, lo, hi, v))
        usage_error("option " + name + ": expected an integer in " + std::to_string(lo) +
                    " .. " + std::to_string(hi) + ", got " + show(value));
    return v;
}

double option_double(const std::string &name, const std::string &value, double lo, double hi)
{
    const char *begin = value.c_str();
    char *end = nullptr;
    errno = 0;
    double v = std::strtod(begin, &end);
    if (value.empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || v < lo || v > hi)
        usage_error("option " + name + ": expected a number in [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "], got " + show(value));
    return v;
}

Options parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::fputs(HELP_TEXT, stdout);
            std::exit(0);
        }
    }
    if (argc < 2) usage_error("missing subcommand (build, query or throughput)");

    Options o;
    o.command = argv[1];
    const bool is_build = o.command == "build";
    const bool is_query = o.command == "query";
    const bool is_throughput = o.command == "throughput";
    if (!is_build && !is_query && !is_throughput)
        usage_error("unknown subcommand " + show(o.command) + " (build, query or throughput)");

    bool have_threads = false, have_seconds = false;
    std::vector<std::string> positional;
    for (int i = 2; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.size() < 2 || arg.compare(0, 2, "--") != 0) {
            positional.push_back(arg);
            continue;
        }
        std::string name = arg, value;
        bool have_value = false;
        std::size_t eq = arg.find('=');
        if (eq != std::string::npos) {
            name = arg.substr(0, eq);
            value = arg.substr(eq + 1);
            have_value = true;
        }
        if (name == "--skip-empty") {
            if (!is_build) usage_error("option --skip-empty is for build only");
            if (have_value) usage_error("option --skip-empty takes no value");
            o.skip_empty = true;
            continue;
        }

        const bool search_opt = name == "--k" || name == "--op" || name == "--k1" ||
                                name == "--b" || name == "--min-normlen";
        const bool throughput_opt = name == "--threads" || name == "--seconds";
        const bool build_opt = name == "--commit-every";
        if (!search_opt && !throughput_opt && !build_opt)
            usage_error("unknown option " + show(name));
        if ((search_opt && is_build) || (throughput_opt && !is_throughput) ||
            (build_opt && !is_build))
            usage_error("option " + name + " does not apply to " + o.command);
        if (!have_value) {
            if (i + 1 >= argc) usage_error("option " + name + " needs a value");
            value = argv[++i];
        }

        if (name == "--k") {
            o.k = static_cast<Xapian::doccount>(
                option_uint(name, value, 1, std::numeric_limits<Xapian::doccount>::max()));
            o.have_k = true;
        } else if (name == "--op") {
            if (value == "and")
                o.op = Xapian::Query::OP_AND;
            else if (value == "or")
                o.op = Xapian::Query::OP_OR;
            else
                usage_error("option --op: expected 'and' or 'or', got " + show(value));
            o.have_op = true;
        } else if (name == "--k1") {
            o.k1 = option_double(name, value, 0, 1e6);
        } else if (name == "--b") {
            o.b = option_double(name, value, 0, 1);
        } else if (name == "--min-normlen") {
            o.min_normlen = option_double(name, value, 0, 1e6);
        } else if (name == "--threads") {
            o.threads = static_cast<unsigned>(option_uint(name, value, 1, 4096));
            have_threads = true;
        } else if (name == "--seconds") {
            o.seconds = option_double(name, value, 0, 1e6);
            if (o.seconds <= 0) usage_error("option --seconds: must be > 0");
            have_seconds = true;
        } else if (name == "--commit-every") {
            o.commit_every = option_uint(name, value, 1, 1000000000ULL);
        }
    }

    if (positional.size() != 1)
        usage_error(o.command + ": expected exactly one DBDIR argument, got " +
                    std::to_string(positional.size()));
    o.dbdir = positional[0];
    if (!is_build) {
        if (!o.have_k) usage_error(o.command + ": --k is required");
        if (!o.have_op) usage_error(o.command + ": --op is required");
    }
    if (is_throughput) {
        if (!have_threads) usage_error("throughput: --threads is required");
        if (!have_seconds) usage_error("throughput: --seconds is required");
    }
    return o;
}

// ---------------------------------------------------------------- build

std::uintmax_t directory_bytes(const std::string &dir)
{
    namespace fs = std::filesystem;
    std::uintmax_t total = 0;
    for (const auto &entry : fs::recursive_directory_iterator(dir)) {
        if (entry.is_regular_file()) total += entry.file_size();
    }
    return total;
}

int cmd_build(const Options &o)
{
    // Xapian also commits by itself every XAPIAN_FLUSH_THRESHOLD changed
    // documents (10000 by default); let our own --commit-every decide,
    // unless the caller set the variable.
    if (std::getenv("XAPIAN_FLUSH_THRESHOLD") == nullptr) {
        std::string threshold = std::to_string(o.commit_every + 1);
        setenv("XAPIAN_FLUSH_THRESHOLD", threshold.c_str(), 1);
    }

    const Clock::time_point t0 = Clock::now();
    Xapian::WritableDatabase db(o.dbdir, Xapian::DB_CREATE_OR_OVERWRITE);

    std::unordered_set<Xapian::docid> seen;
    std::string line;
    unsigned long long lineno = 0, docs = 0, terms_skipped = 0, empty_skipped = 0;
    unsigned long long since_commit = 0;

    while (std::getline(std::cin, line)) {
        ++lineno;
        if (line.empty()) continue;
        auto fail = [&](const std::string &msg) {
            die("docs line " + std::to_string(lineno) + ": " + msg);
        };

        std::size_t tab = line.find('\t');
        std::string id_text = line.substr(0, tab);
        unsigned long long id;
        if (!parse_uint(id_text, 1, std::numeric_limits<Xapian::docid>::max(), id))
            fail("bad docid " + show(id_text) + " (expected an integer 1 .. " +
                 std::to_string(std::numeric_limits<Xapian::docid>::max()) + ")");
        const Xapian::docid did = static_cast<Xapian::docid>(id);
        if (!seen.insert(did).second) fail("duplicate docid " + id_text);

        Xapian::Document doc;
        bool any_term = false;
        if (tab != std::string::npos) {
            std::size_t pos = tab + 1;
            if (line.find('\t', pos) != std::string::npos) fail("more than one TAB");
            while (pos < line.size()) {
                std::size_t end = line.find(' ', pos);
                if (end == std::string::npos) end = line.size();
                if (end > pos) {
                    std::string token = line.substr(pos, end - pos);
                    std::size_t colon = token.rfind(':');
                    if (colon == std::string::npos) fail("token without ':tf': " + show(token));
                    if (colon == 0) fail("empty lexeme in token " + show(token));
                    unsigned long long tf;
                    if (!parse_uint(token.substr(colon + 1), 1,
                                    std::numeric_limits<Xapian::termcount>::max(), tf))
                        fail("bad tf in token " + show(token) + " (expected an integer >= 1)");
                    token.resize(colon);
                    if (token.size() > MAX_TERM_BYTES) {
                        ++terms_skipped;
                    } else {
                        doc.add_term(token, static_cast<Xapian::termcount>(tf));
                        any_term = true;
                    }
                }
                pos = end + 1;
            }
        }

        if (!any_term && o.skip_empty) {
            ++empty_skipped;
            continue;
        }
        db.replace_document(did, doc);
        ++docs;
        if (++since_commit >= o.commit_every) {
            db.commit();
            since_commit = 0;
        }
    }
    if (std::cin.bad()) die("error reading docs from stdin");

    db.commit();
    db.close();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

    std::printf("docs=%llu terms_skipped=%llu seconds=%.3f db_bytes=%ju", docs, terms_skipped,
                seconds, directory_bytes(o.dbdir));
    if (o.skip_empty) std::printf(" empty_skipped=%llu", empty_skipped);
    std::printf("\n");
    return 0;
}

// ---------------------------------------------------------------- queries

struct QueryLine {
    std::string qid;
    std::vector<std::string> terms;  // distinct, in first-seen order
};

std::vector<QueryLine> read_queries()
{
    std::vector<QueryLine> queries;
    std::string line;
    unsigned long long lineno = 0;
    while (std::getline(std::cin, line)) {
        ++lineno;
        if (line.empty()) continue;
        auto fail = [&](const std::string &msg) {
            die("queries line " + std::to_string(lineno) + ": " + msg);
        };

        QueryLine q;
        std::size_t tab = line.find('\t');
        q.qid = line.substr(0, tab);
        if (q.qid.empty()) fail("empty qid");
        if (tab != std::string::npos) {
            std::size_t pos = tab + 1;
            if (line.find('\t', pos) != std::string::npos) fail("more than one TAB");
            std::unordered_set<std::string> seen;
            while (pos < line.size()) {
                std::size_t end = line.find(' ', pos);
                if (end == std::string::npos) end = line.size();
                if (end > pos) {
                    std::string term = line.substr(pos, end - pos);
                    if (seen.insert(term).second) q.terms.push_back(std::move(term));
                }
                pos = end + 1;
            }
        }
        queries.push_back(std::move(q));
    }
    if (std::cin.bad()) die("error reading queries from stdin");
    return queries;
}

struct Hit {
    Xapian::docid did;
    double weight;
};

// One search: build the query, run it, read the top k out of the MSet.
void run_query(Xapian::Enquire &enquire, const std::vector<std::string> &terms,
               Xapian::Query::op op, Xapian::doccount k, std::vector<Hit> &hits)
{
    hits.clear();
    // An empty term list gives Xapian::Query::MatchNothing.
    Xapian::Query query(op, terms.begin(), terms.end());
    enquire.set_query(query);
    Xapian::MSet mset = enquire.get_mset(0, k);
    for (Xapian::MSetIterator it = mset.begin(); it != mset.end(); ++it)
        hits.push_back({*it, it.get_weight()});
}

void setup_enquire(Xapian::Enquire &enquire, const Options &o)
{
    enquire.set_weighting_scheme(
        Xapian::BM25Weight(o.k1, 0 /* k2 */, 1 /* k3 */, o.b, o.min_normlen));
    enquire.set_docid_order(Xapian::Enquire::ASCENDING);
}

int cmd_query(const Options &o)
{
    std::vector<QueryLine> queries = read_queries();
    Xapian::Database db(o.dbdir);
    Xapian::Enquire enquire(db);
    setup_enquire(enquire, o);

    std::vector<Hit> hits;
    std::string out;
    char buf[64];
    for (const QueryLine &q : queries) {
        const Clock::time_point t0 = Clock::now();
        run_query(enquire, q.terms, o.op, o.k, hits);
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();

        out = q.qid;
        std::snprintf(buf, sizeof buf, "\t%.1f\t", us);
        out += buf;
        for (std::size_t i = 0; i < hits.size(); ++i) {
            std::snprintf(buf, sizeof buf, "%s%u:%.6g", i ? "," : "", hits[i].did,
                          hits[i].weight);
            out += buf;
        }
        out += '\n';
        std::fwrite(out.data(), 1, out.size(), stdout);
    }
    if (std::fflush(stdout) != 0) die("error writing to stdout");
    return 0;
}

// ---------------------------------------------------------------- throughput

struct Worker {
    std::unique_ptr<Xapian::Database> db;
    std::unique_ptr<Xapian::Enquire> enquire;
    unsigned long long queries = 0;
    double sink = 0;  // keeps the reading of the results from being optimized away
    std::string error;
};

int cmd_throughput(const Options &o)
{
    const std::vector<QueryLine> queries = read_queries();
    if (queries.empty()) die("throughput: no queries on stdin");
    const std::size_t nq = queries.size();

    // Every thread gets its own Database and Enquire, opened here so that an
    // unreadable database is reported before anything runs.
    std::vector<Worker> workers(o.threads);
    for (Worker &w : workers) {
        w.db = std::make_unique<Xapian::Database>(o.dbdir);
        w.enquire = std::make_unique<Xapian::Enquire>(*w.db);
        setup_enquire(*w.enquire, o);
    }

    std::atomic<bool> stop{false};
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));

    auto body = [&](unsigned index) {
        Worker &w = workers[index];
        std::size_t qi = static_cast<std::size_t>(
            static_cast<unsigned long long>(index) * nq / o.threads);
        std::vector<Hit> hits;
        try {
            while (!stop.load(std::memory_order_relaxed)) {
                run_query(*w.enquire, queries[qi].terms, o.op, o.k, hits);
                for (const Hit &h : hits) w.sink += h.did + h.weight;
                ++w.queries;
                if (++qi == nq) qi = 0;
                if (Clock::now() >= deadline) break;
            }
        } catch (const Xapian::Error &e) {
            w.error = e.get_description();
            stop = true;
        } catch (const std::exception &e) {
            w.error = e.what();
            stop = true;
        }
    };

    std::vector<std::thread> threads;
    threads.reserve(o.threads);
    for (unsigned i = 0; i < o.threads; ++i) threads.emplace_back(body, i);
    for (std::thread &t : threads) t.join();
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();

    unsigned long long total = 0;
    double sink = 0;
    for (const Worker &w : workers) {
        if (!w.error.empty()) die("throughput: " + w.error);
        total += w.queries;
        sink += w.sink;
    }
    if (std::isnan(sink)) std::fprintf(stderr, "%s: note: NaN in results\n", PROG);

    std::printf("threads=%u seconds=%.3f queries=%llu qps=%.1f\n", o.threads, elapsed, total,
                static_cast<double>(total) / elapsed);
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    std::ios::sync_with_stdio(false);
    const Options o = parse_args(argc, argv);
    try {
        if (o.command == "build") return cmd_build(o);
        if (o.command == "query") return cmd_query(o);
        return cmd_throughput(o);
    } catch (const Xapian::Error &e) {
        die(o.command + " " + o.dbdir + ": " + e.get_description());
    } catch (const std::exception &e) {
        die(o.command + " " + o.dbdir + ": " + e.what());
    }
}
