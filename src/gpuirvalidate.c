/*-------------------------------------------------------------------------
 *
 * gpuirvalidate.c
 *	  Operator class validation of gpuir (amvalidate).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amvalidate.h"
#include "access/htup_details.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_opclass.h"
#include "utils/catcache.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "gpuir.h"

/*
 * gpuirvalidate: a gpuir operator class has only ordering operators, of
 * strategy 1 (col <@> text query) or 2 (col <@> tsquery), and no support
 * functions.  Reports problems as
 * INFO, like the core access methods, and returns whether it is valid.
 */
bool
gpuirvalidate(Oid opclassoid)
{
	bool		result = true;
	HeapTuple	classtup;
	Form_pg_opclass classform;
	CatCList   *oprlist;

	classtup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	if (!HeapTupleIsValid(classtup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	classform = (Form_pg_opclass) GETSTRUCT(classtup);

	oprlist = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(classform->opcfamily));
	for (int i = 0; i < oprlist->n_members; i++)
	{
		Form_pg_amop oprform = (Form_pg_amop) GETSTRUCT(&oprlist->members[i]->tuple);

		if ((oprform->amopstrategy != GPUIR_STRATEGY_TEXT &&
			 oprform->amopstrategy != GPUIR_STRATEGY_TSQUERY) ||
			oprform->amoppurpose != AMOP_ORDER)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("gpuir operator class \"%s\" contains operator %s with invalid strategy or purpose",
							NameStr(classform->opcname),
							format_operator(oprform->amopopr))));
			result = false;
		}
	}
	ReleaseCatCacheList(oprlist);
	ReleaseSysCache(classtup);
	return result;
}
