/*-------------------------------------------------------------------------
 *
 * gpuir.c
 *	  Module entry points: _PG_init (GUCs, reloptions) and the index access
 *	  method handler.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/reloptions.h"
#include "catalog/pg_class.h"
#include "commands/vacuum.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "gpuir.h"
#include "gpuirservice.h"

PG_MODULE_MAGIC;

bool		gpuir_rank_under_rls = true;
int			gpuir_insert_buffer_limit = GPUIR_DEFAULT_BUFFER_LIMIT;
int			gpuir_doclength_cache = GPUIR_DEFAULT_DOCLENGTH_CACHE;
int			gpuir_taat_max_postings = GPUIR_DEFAULT_TAAT_MAX_POSTINGS;
bool		gpuir_debug_rescore = false;
int			gpuir_debug_dict_hint_skew = 0;
int			gpuir_device = GPUIR_DEVICE_AUTO;
int			gpuir_max_batch = 256;
double		gpuir_batch_window = 0.0;
int			gpuir_worker_spin = 200;
int			gpuir_wake_fanout = 2;
int			gpuir_decoded_lists_memory = 2048;	/* MB */
char	   *gpuir_device_memory = NULL;
int			gpuir_gpu_min_postings = GPUIR_DEFAULT_GPU_MIN_POSTINGS;
int			gpuir_auto_cpu_slots = -1;
double		gpuir_auto_clients_per_core = 2.0;
int			gpuir_gpu_timeout = 10000;
char	   *gpuir_devices = NULL;
int			gpuir_gpu_split_postings = GPUIR_DEFAULT_GPU_SPLIT_POSTINGS;

static const struct config_enum_entry device_options[] = {
	{"auto", GPUIR_DEVICE_AUTO, false},
	{"gpu", GPUIR_DEVICE_GPU, false},
	{"cpu", GPUIR_DEVICE_CPU, false},
	{NULL, 0, false}
};

static const struct config_enum_entry fault_options[] = {
	{"none", GPUIR_FAULT_NONE, false},
	{"upload_oom", GPUIR_FAULT_UPLOAD_OOM, false},
	{"upload_error", GPUIR_FAULT_UPLOAD_ERROR, false},
	{"search_error", GPUIR_FAULT_SEARCH_ERROR, false},
	{"exit_upload", GPUIR_FAULT_EXIT_UPLOAD, false},
	{"slow_answer", GPUIR_FAULT_SLOW_ANSWER, false},
	{NULL, 0, false}
};

int			gpuir_debug_gpu_fault = GPUIR_FAULT_NONE;

static relopt_kind gpuir_relopt_kind;

void		_PG_init(void);

/*
 * check_device_memory: GUC check hook of gpuir.device_memory: the syntax
 * and range the GPU service accepts (GpuirParseDeviceMemory), without the
 * card's size, which only the service knows.
 */
static bool
check_device_memory(char **newval, void **extra, GucSource source)
{
	GpuirDeviceMemory dm;
	char		why[128];

	if (GpuirParseDeviceMemory(*newval, &dm, why, sizeof(why)))
		return true;
	GUC_check_errdetail("%s", why);
	GUC_check_errhint("Use an amount such as '4GB' or a share such as '50%%'.");
	return false;
}

/*
 * check_devices: GUC check hook of gpuir.devices: 'all' or a list of
 * distinct device numbers (GpuirParseDevices); whether they exist only the
 * GPU service can tell.
 */
static bool
check_devices(char **newval, void **extra, GucSource source)
{
	bool		all;
	int			ordinals[GPUIR_MAX_DEVICES];
	int			n;
	char		why[128];

	if (GpuirParseDevices(*newval, &all, ordinals, &n, why, sizeof(why)))
		return true;
	GUC_check_errdetail("%s", why);
	GUC_check_errhint("Use 'all' or CUDA device numbers such as '0,1'.");
	return false;
}

void
_PG_init(void)
{
	gpuir_relopt_kind = add_reloption_kind();
	add_string_reloption(gpuir_relopt_kind, "text_config",
						 "Text search configuration used to tokenize documents and queries",
						 NULL, NULL, AccessExclusiveLock);
	add_real_reloption(gpuir_relopt_kind, "k1", "BM25 term frequency saturation k1",
					   GPUIR_DEFAULT_K1, GPUIR_MIN_K1, GPUIR_MAX_K1, AccessExclusiveLock);
	add_real_reloption(gpuir_relopt_kind, "b", "BM25 document length normalisation b",
					   GPUIR_DEFAULT_B, GPUIR_MIN_B, GPUIR_MAX_B, AccessExclusiveLock);
	add_string_reloption(gpuir_relopt_kind, "weights",
						 "BM25F weight of each indexed column: '2, 1' in column order or '{title:2, body:1}'",
						 NULL, GpuirValidateWeights, AccessExclusiveLock);
	/* read by each merge, so a change applies from the next one on */
	add_int_reloption(gpuir_relopt_kind, "max_segment_docs",
					  "Documents a segment holds at most (0: no cap): CREATE INDEX and merges write segments of at most this many",
					  0, 0, INT_MAX, ShareUpdateExclusiveLock);
	/* copied to the metapage by CREATE INDEX and REINDEX, as k1 and b */
	add_real_reloption(gpuir_relopt_kind, "prior_weight",
					   "Weight w of the document prior (the INCLUDE column): score = BM25 + w * prior",
					   GPUIR_DEFAULT_PRIOR_WEIGHT, 0.0, GPUIR_MAX_PRIOR_WEIGHT, AccessExclusiveLock);

	DefineCustomIntVariable("gpuir.insert_buffer_limit",
							"Size of a gpuir insert buffer past which an insert merges it into a segment.",
							"Queries read the whole insert buffer, so a large buffer slows them down.",
							&gpuir_insert_buffer_limit, GPUIR_DEFAULT_BUFFER_LIMIT,
							GPUIR_MIN_BUFFER_LIMIT, GPUIR_MAX_BUFFER_LIMIT,
							PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuir.doclength_cache",
							"Memory each session may keep the document lengths of gpuir segments in.",
							"The CPU engine reads a scored document's length from this copy instead of the index pages; a segment larger than the budget is read from its pages; 0 turns the copy off.",
							&gpuir_doclength_cache, GPUIR_DEFAULT_DOCLENGTH_CACHE, 0, MAX_KILOBYTES,
							PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuir.taat_max_postings",
							"Postings a query's lists in a segment may hold at most for the CPU engine to score them term at a time there.",
							"In modes or, wand and bmw, lists this short are scored term at a time into score accumulators (with MaxScore's skipping of the non-essential lists once there is a threshold), which costs less than document-at-a-time skipping when there is little to skip; results are the same. It needs the segment's document lengths to fit in gpuir.doclength_cache. 0 always uses the mode's own algorithm.",
							&gpuir_taat_max_postings, GPUIR_DEFAULT_TAAT_MAX_POSTINGS, 0, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("gpuir.debug_rescore",
							 "Developer option: check the CPU engine's rescoring of given documents against its own searches.",
							 "After each CPU-engine query in modes or, wand and bmw, every document of every segment is scored again through the path that rescores a GPU search over pruned lists, and the top-k must be the same (else an error). It scores the whole index: for tests only.",
							 &gpuir_debug_rescore, false,
							 PGC_USERSET, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuir.debug_dict_hint_skew",
							"Developer option: read the dictionary positions other sessions found this many entries off.",
							"With gpuir in shared_preload_libraries, a session that has not looked a lexeme up itself checks the position another session found on the pages before it searches the dictionary; off positions must be refused and searched, with the same answers. For tests only.",
							&gpuir_debug_dict_hint_skew, 0, 0, 1000,
							PGC_USERSET, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
	DefineCustomEnumVariable("gpuir.device",
							 "Where gpuir queries run: auto, gpu or cpu.",
							 "auto sends each query to the device a cost model of recent query times expects to answer it first (queries whose lists hold fewer than gpuir.gpu_min_postings postings stay on the CPU while the cores are not oversubscribed).",
							 &gpuir_device, GPUIR_DEVICE_AUTO, device_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuir.gpu_min_postings",
							"Postings a query's lists must hold for gpuir.device = auto to consider the GPU.",
							NULL, &gpuir_gpu_min_postings, GPUIR_DEFAULT_GPU_MIN_POSTINGS, 0, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuir.auto_cpu_slots",
							"Backends that gpuir.device = auto lets run the CPU engine at once before it sends queries that the GPU serves with less CPU time to the GPU.",
							"While more backends are in a gpuir search than there are processors, auto sends a query to the CPU engine when its CPU time is below the GPU's round trip and below twice what a GPU query costs its backend, and fewer than this many backends run the CPU engine, so that both devices work and the GPU service keeps cores; otherwise to the device that costs the cores less. -1: half the processors; 0: never.",
							&gpuir_auto_cpu_slots, -1, -1, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("gpuir.auto_clients_per_core",
							 "Clients per processor past which gpuir.device = auto takes the cores as oversubscribed.",
							 "A client is a backend that began a gpuir search in the last 10 ms. With more of them than this many per online processor, or more backends in a gpuir search than processors, auto sends each query to the device that costs the cores less; otherwise to the one that answers first. 0: only the backends in a search count. A session's value decides the load class under which its queries' times feed the shared cost model (hence superuser only); the GPU service's worker uses the server's.",
							 &gpuir_auto_clients_per_core, 2.0, 0.0, 1000.0,
							 PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuir.gpu_split_postings",
							"Postings a single query's lists must hold for the GPU service to split it over all its devices.",
							"Each device ranks one docID range of the query and the backend merges their top-k; -1 never splits.",
							&gpuir_gpu_split_postings, GPUIR_DEFAULT_GPU_SPLIT_POSTINGS, -1, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("gpuir.rank_under_rls",
							 "Whether gpuir ranks rows of tables whose row-level security policies apply to the user.",
							 "BM25 scores use the statistics (N, average length, document frequencies) of all rows, including those the policies hide; off makes gpuir index scans of such tables raise an error instead.",
							 &gpuir_rank_under_rls, true,
							 PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuir.gpu_timeout",
							"Time a query waits for the GPU service before the CPU engine answers it.",
							NULL, &gpuir_gpu_timeout, 10000, 10, 3600000,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuir.max_batch",
							"Queries the GPU service gathers into one batch at most.",
							NULL, &gpuir_max_batch, 256, 1, 10000,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("gpuir.batch_window",
							 "Longest time the GPU service waits, under load, for more queries before running a batch.",
							 "0 runs every batch as soon as the service is free, with the queries that have arrived.",
							 &gpuir_batch_window, 0.0, 0.0, 1000.0,
							 PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuir.worker_spin",
							"Microseconds the GPU service polls for the next request before it sleeps, while few backends search.",
							"0 sleeps at once; a sleeping worker takes about 10 us to wake.",
							&gpuir_worker_spin, 200, 0, 10000,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuir.wake_fanout",
							"Backends that each backend answered by the GPU service wakes, so that the service itself wakes only this many a batch.",
							"0: the service wakes every backend of a batch itself.",
							&gpuir_wake_fanout, 2, 0, GPUIR_WAKE_FANOUT_MAX,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	/* the GPU service exists only when gpuir is preloaded */
	if (process_shared_preload_libraries_in_progress)
	{
		DefineCustomStringVariable("gpuir.device_memory",
								   "GPU memory the GPU service may use to cache posting lists: an amount (4GB) or a share of the card (50%).",
								   NULL, &gpuir_device_memory, GPUIR_DEFAULT_DEVICE_MEMORY,
								   PGC_POSTMASTER, 0, check_device_memory, NULL, NULL);
		DefineCustomStringVariable("gpuir.devices",
								   "GPUs the GPU service uses: all, or CUDA device numbers such as 0,1.",
								   "Each device gets a worker process of its own, with its own list cache of gpuir.device_memory.",
								   &gpuir_devices, "all",
								   PGC_POSTMASTER, 0, check_devices, NULL, NULL);
		DefineCustomIntVariable("gpuir.list_readers",
								"Processes that copy the posting lists a GPU batch sends to the device beside the GPU service's worker, for a segment larger than gpuir.device_memory.",
								"Started by each device's worker when it first needs them, as background workers (counted against max_worker_processes); 0 leaves the copying to the worker alone.",
								&gpuir_list_readers, 4, 0, GPUIR_MAX_LIST_READERS,
								PGC_SIGHUP, 0, NULL, NULL, NULL);
		DefineCustomIntVariable("gpuir.decoded_lists_memory",
								"GPU memory each search job of the GPU service keeps decoded posting lists in, for later searches that use them.",
								"A list found decoded (same segment, same statistics) is not decoded again. The lists kept take at most this much; a batch whose own lists need more (up to 2 GB) keeps none. 0 keeps none: every search decodes its lists.",
								&gpuir_decoded_lists_memory, 2048, 0, 1 << 20,
								PGC_SIGHUP, GUC_UNIT_MB, NULL, NULL, NULL);
		DefineCustomBoolVariable("gpuir.pruned_lists",
								 "Lets the GPU service keep the high-impact part of long posting lists of a segment larger than gpuir.device_memory, and answer or and bmw queries from it where it decides their top-k.",
								 "A query whose pruned lists do not decide its top-k is answered by the CPU engine; results are the same either way.",
								 &gpuir_pruned_lists, false,
								 PGC_SIGHUP, 0, NULL, NULL, NULL);
		DefineCustomEnumVariable("gpuir.debug_gpu_fault",
								 "Developer option: a failure the GPU service makes up (none, upload_oom, upload_error, search_error, exit_upload, slow_answer).",
								 "For testing that queries are answered on the CPU when the GPU fails; see gpuirservice.h.",
								 &gpuir_debug_gpu_fault, GPUIR_FAULT_NONE, fault_options,
								 PGC_SIGHUP, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
		GpuirServiceInit();
	}
	GpuirExplainInit();
	GpuirScanInit();
	MarkGUCPrefixReserved("gpuir");
}

/*
 * GpuirMaxSegmentDocs: the max_segment_docs reloption of index (0: no cap;
 * see gpuirmerge.c for how merges keep to it).
 */
uint32
GpuirMaxSegmentDocs(Relation index)
{
	GpuirOptions *opts = (GpuirOptions *) index->rd_options;

	return opts ? (uint32) opts->max_segment_docs : 0;
}

/*
 * gpuiroptions: parse text_config, k1, b, weights, max_segment_docs and
 * prior_weight.  Out-of-range values raise
 * 22023 from the reloptions machinery.
 */
bytea *
gpuiroptions(Datum reloptions, bool validate)
{
	static const relopt_parse_elt tab[] = {
		/* designated: 18 added a field (isset_offset) that gpuir leaves 0 */
		{.optname = "text_config", .opttype = RELOPT_TYPE_STRING,
		.offset = offsetof(GpuirOptions, text_config_offset)},
		{.optname = "k1", .opttype = RELOPT_TYPE_REAL, .offset = offsetof(GpuirOptions, k1)},
		{.optname = "b", .opttype = RELOPT_TYPE_REAL, .offset = offsetof(GpuirOptions, b)},
		{.optname = "weights", .opttype = RELOPT_TYPE_STRING,
		.offset = offsetof(GpuirOptions, weights_offset)},
		{.optname = "max_segment_docs", .opttype = RELOPT_TYPE_INT,
		.offset = offsetof(GpuirOptions, max_segment_docs)},
		{.optname = "prior_weight", .opttype = RELOPT_TYPE_REAL,
		.offset = offsetof(GpuirOptions, prior_weight)},
	};

	return (bytea *) build_reloptions(reloptions, validate, gpuir_relopt_kind,
									  sizeof(GpuirOptions), tab, lengthof(tab));
}

/* is rel an index of the gpuir access method? */
bool
GpuirIsGpuirIndex(Relation rel)
{
	return rel->rd_rel->relkind == RELKIND_INDEX &&
		rel->rd_indam != NULL && rel->rd_indam->ambuild == gpuirbuild;
}

/*
 * GpuirOpenIndex: open the relation indexoid with lockmode and check that it
 * is a gpuir index; raises 42809 (wrong_object_type) otherwise.
 */
Relation
GpuirOpenIndex(Oid indexoid, LOCKMODE lockmode)
{
	Relation	rel = relation_open(indexoid, lockmode);

	if (!GpuirIsGpuirIndex(rel))
	{
		char	   *name = pstrdup(RelationGetRelationName(rel));

		relation_close(rel, lockmode);
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a gpuir index", name),
				 errhint("Pass an index created with USING gpuir.")));
	}
	return rel;
}

/* the SQL names of the query modes, the one list of them */
static const struct
{
	const char *name;
	GpuirMode	mode;
}			mode_names[] = {
	{"and", GPUIR_MODE_AND},
	{"or", GPUIR_MODE_OR},
	{"wand", GPUIR_MODE_WAND},
	{"bmw", GPUIR_MODE_BMW},
	{"and_or", GPUIR_MODE_AND_OR},
};

/* GpuirParseMode: map a mode name to GpuirMode; raises 22023 when unknown */
GpuirMode
GpuirParseMode(const char *mode)
{
	for (size_t i = 0; i < lengthof(mode_names); i++)
		if (strcmp(mode, mode_names[i].name) == 0)
			return mode_names[i].mode;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown gpuir query mode \"%s\"", mode),
			 errhint("Valid modes are \"and\", \"or\", \"wand\", \"bmw\" and \"and_or\".")));
	return GPUIR_MODE_BMW;		/* keep compiler quiet */
}

/* GpuirModeName: the SQL name of a query mode (GpuirParseMode's inverse) */
const char *
GpuirModeName(GpuirMode mode)
{
	for (size_t i = 0; i < lengthof(mode_names); i++)
		if (mode_names[i].mode == mode)
			return mode_names[i].name;
	return "?";
}

PG_FUNCTION_INFO_V1(gpuir_handler);

/* gpuir_handler: the index access method handler; sets every field */
Datum
gpuir_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *amroutine = makeNode(IndexAmRoutine);

	amroutine->amstrategies = 0;
	amroutine->amsupport = 0;
	amroutine->amoptsprocnum = 0;
	amroutine->amcanorder = false;
	amroutine->amcanorderbyop = true;
	amroutine->amcanbackward = false;
	amroutine->amcanunique = false;
	amroutine->amcanmulticol = true;
	amroutine->amoptionalkey = true;
	amroutine->amsearcharray = false;
	amroutine->amsearchnulls = false;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	amroutine->amcaninclude = true;	/* one INCLUDE column: the document prior */
	amroutine->amusemaintenanceworkmem = false;
	amroutine->amparallelvacuumoptions = VACUUM_OPTION_NO_PARALLEL;
	amroutine->amkeytype = InvalidOid;

	amroutine->ambuild = gpuirbuild;
	amroutine->ambuildempty = gpuirbuildempty;
	amroutine->aminsert = gpuirinsert;
	amroutine->ambulkdelete = gpuirbulkdelete;
	amroutine->amvacuumcleanup = gpuirvacuumcleanup;
	amroutine->amcanreturn = NULL;
	amroutine->amcostestimate = gpuircostestimate;
	amroutine->amoptions = gpuiroptions;
	amroutine->amproperty = NULL;
	amroutine->ambuildphasename = gpuirbuildphasename;
	amroutine->amvalidate = gpuirvalidate;
	amroutine->amadjustmembers = NULL;
	amroutine->ambeginscan = gpuirbeginscan;
	amroutine->amrescan = gpuirrescan;
	amroutine->amgettuple = gpuirgettuple;
	amroutine->amgetbitmap = NULL;
	amroutine->amendscan = gpuirendscan;
	amroutine->ammarkpos = NULL;
	amroutine->amrestrpos = NULL;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;

	PG_RETURN_POINTER(amroutine);
}
