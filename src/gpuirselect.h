/*-------------------------------------------------------------------------
 *
 * gpuirselect.h
 *	  A template (in the manner of PostgreSQL's lib/sort_template.h) of a
 *	  selection: reorder c[0, n) so that its k best are c[0, k) and c[k - 1]
 *	  is the worst of them, by Hoare's FIND (Hoare 1961, Algorithm 65) with a
 *	  median-of-three pivot: O(n) expected.  The top-k of the CPU engine cuts
 *	  its candidate arrays with it (gpuirengine.c).  Private to src/.
 *
 * Define before including:
 *	SEL_NAME			the function's name (static)
 *	SEL_ELEMENT_TYPE	the element type
 *	SEL_ARG_TYPE		the type of a context argument passed to SEL_BETTER
 *	SEL_BETTER(arg, a, b)	does *a rank before *b?  A strict total order
 *						(no two elements equal), pointers to elements
 *
 * The result: static void SEL_NAME(SEL_ARG_TYPE arg, SEL_ELEMENT_TYPE *c,
 * int n, int k), 1 <= k <= n.  The macros are undefined at the end.
 *
 *-------------------------------------------------------------------------
 */

static void
SEL_NAME(SEL_ARG_TYPE arg, SEL_ELEMENT_TYPE *c, int n, int k)
{
	int			lo = 0;
	int			hi = n - 1;

	Assert(k >= 1 && k <= n);
	(void) arg;
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			i = lo;
		int			j = hi;
		SEL_ELEMENT_TYPE pivot;
		SEL_ELEMENT_TYPE tmp;

#define SEL_SWAP(x, y) (tmp = c[x], c[x] = c[y], c[y] = tmp)
		if (SEL_BETTER(arg, &c[mid], &c[lo]))
			SEL_SWAP(mid, lo);
		if (SEL_BETTER(arg, &c[hi], &c[lo]))
			SEL_SWAP(hi, lo);
		if (SEL_BETTER(arg, &c[hi], &c[mid]))
			SEL_SWAP(hi, mid);
		pivot = c[mid];
		/* after this: c[lo, j] rank before or at the pivot, c[i, hi] at or after it */
		while (i <= j)
		{
			while (SEL_BETTER(arg, &c[i], &pivot))
				i++;
			while (SEL_BETTER(arg, &pivot, &c[j]))
				j--;
			if (i <= j)
			{
				SEL_SWAP(i, j);
				i++;
				j--;
			}
		}
#undef SEL_SWAP
		if (k - 1 <= j)
			hi = j;
		else if (k - 1 >= i)
			lo = i;
		else
			break;				/* c[k - 1] is the pivot, in place */
	}
}

#undef SEL_NAME
#undef SEL_ELEMENT_TYPE
#undef SEL_ARG_TYPE
#undef SEL_BETTER
