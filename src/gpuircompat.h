/*-------------------------------------------------------------------------
 *
 * gpuircompat.h
 *	  The differences between the PostgreSQL major versions gpuir builds on
 *	  (15, 17, 18; 16 is untested), in one place.  Everything else of src/
 *	  uses the names below, never PG_VERSION_NUM.
 *
 *	  GpuirRelFile				a relation's physical file: RelFileNode up
 *								to 15, RelFileLocator from 16
 *	  GPUIR_RELFILE_{SPC,DB,REL} its three numbers, for messages
 *	  GpuirRelationFile(rel)	the file of an open relation
 *	  GpuirSmgrFile(rel)		the same through its smgr relation
 *	  GpuirBackendSlot()		this backend's 0-based slot among
 *								MaxBackends: MyBackendId - 1 up to 16,
 *								MyProcNumber from 17; -1 when it has none
 *	  gpuir_ownercheck(relid)	pg_class_ownercheck up to 15, object_ownercheck
 *	  gpuir_qualified_name_list(s) stringToQualifiedNameList, whose escontext
 *								argument came in 16
 *	  gpuir_vacuum_delay_point()  vacuum_delay_point, whose is_analyze
 *								argument came in 18
 *	  gpuir_smgr_close_all()	close every file this process opened through
 *								smgr: smgrcloseall up to 16, smgrreleaseall
 *	  gpuir_abort_buffer_io()	end a buffer I/O an ERROR interrupted, in a
 *								process's own error recovery: AbortBufferIO
 *								up to 16; from 17 the resource owner's
 *								release does it
 *	  gpuir_buffile_read(f, p, n) read exactly n bytes of a BufFile, else
 *								an error: BufFileRead and a length check up
 *								to 15, BufFileReadExact from 16
 *	  gpuir_buffile_write(f, p, n) BufFileWrite, whose buffer became const
 *								in 16
 *	  pg_attribute_noreturn()	gone in 18 (pg_noreturn before the
 *								declaration instead): defined here as GCC's
 *								attribute, which 15 and 17 expand it to
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIRCOMPAT_H
#define GPUIRCOMPAT_H

#include "postgres.h"

#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/buffile.h"
#include "storage/bufmgr.h"
#include "storage/smgr.h"
#include "utils/acl.h"
#include "utils/rel.h"
#include "utils/regproc.h"

#if PG_VERSION_NUM >= 160000
#include "catalog/pg_class.h"
#include "storage/relfilelocator.h"
#else
#include "storage/relfilenode.h"
#endif
#if PG_VERSION_NUM >= 170000
#include "storage/procnumber.h"
#else
#include "storage/backendid.h"
#endif

#if PG_VERSION_NUM >= 160000
typedef RelFileLocator GpuirRelFile;
#define GPUIR_RELFILE_SPC(f)	((f).spcOid)
#define GPUIR_RELFILE_DB(f)		((f).dbOid)
#define GPUIR_RELFILE_REL(f)	((f).relNumber)
#define GpuirRelationFile(rel)	((rel)->rd_locator)
#define GpuirSmgrFile(rel)		(RelationGetSmgr(rel)->smgr_rlocator.locator)
#define gpuir_ownercheck(relid) object_ownercheck(RelationRelationId, (relid), GetUserId())
#define gpuir_qualified_name_list(s) stringToQualifiedNameList((s), NULL)
#else
typedef RelFileNode GpuirRelFile;
#define GPUIR_RELFILE_SPC(f)	((f).spcNode)
#define GPUIR_RELFILE_DB(f)		((f).dbNode)
#define GPUIR_RELFILE_REL(f)	((f).relNode)
#define GpuirRelationFile(rel)	((rel)->rd_node)
#define GpuirSmgrFile(rel)		(RelationGetSmgr(rel)->smgr_rnode.node)
#define gpuir_ownercheck(relid) pg_class_ownercheck((relid), GetUserId())
#define gpuir_qualified_name_list(s) stringToQualifiedNameList(s)
#endif

static inline int
GpuirBackendSlot(void)
{
#if PG_VERSION_NUM >= 170000
	return MyProcNumber == INVALID_PROC_NUMBER ? -1 : (int) MyProcNumber;
#else
	return MyBackendId == InvalidBackendId ? -1 : (int) MyBackendId - 1;
#endif
}

#if PG_VERSION_NUM >= 180000
#define gpuir_vacuum_delay_point() vacuum_delay_point(false)
#else
#define gpuir_vacuum_delay_point() vacuum_delay_point()
#endif

#ifndef pg_attribute_noreturn
#define pg_attribute_noreturn() __attribute__((noreturn))
#endif

#if PG_VERSION_NUM >= 170000
#define gpuir_smgr_close_all()	smgrreleaseall()
#define gpuir_abort_buffer_io() ((void) 0)
#else
#define gpuir_smgr_close_all()	smgrcloseall()
#define gpuir_abort_buffer_io() AbortBufferIO()
#endif

#if PG_VERSION_NUM >= 160000
#define gpuir_buffile_read(f, p, n) BufFileReadExact((f), (p), (n))
#else
static inline void
gpuir_buffile_read(BufFile *f, void *p, size_t n)
{
	size_t		got = BufFileRead(f, p, n);

	if (got != n)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read from temporary file: read only %zu of %zu bytes",
						got, n)));
}
#endif
#define gpuir_buffile_write(f, p, n) BufFileWrite((f), (void *) (p), (n))

#endif							/* GPUIRCOMPAT_H */
