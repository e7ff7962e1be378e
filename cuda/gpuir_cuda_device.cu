/*-------------------------------------------------------------------------
 *
 * gpuir_cuda_device.cu
 *	  Device discovery of the gpuir CUDA interface: device count and facts.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "gpuir_cuda_internal.cuh"

/*
 * gpuir_cuda_device_count: number of visible devices; see gpuir_cuda.h.
 * cudaGetDeviceCount initialises the runtime, which dlopens libcuda.so.1;
 * without it the call fails with cudaErrorInsufficientDriver (mapped to
 * GPUIR_CUDA_NO_DEVICE) instead of crashing.
 */
extern "C" gpuir_cuda_status
gpuir_cuda_device_count(int *n)
{
	int			count = 0;
	gpuir_cuda_status st;

	if (n == NULL)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	*n = 0;
	st = gpuir_cuda_check(cudaGetDeviceCount(&count));
	if (st != GPUIR_CUDA_OK)
		return st;
	if (count <= 0)
	{
		gpuir_cuda_set_detail("cudaErrorNoDevice", "no CUDA-capable device is detected");
		return GPUIR_CUDA_NO_DEVICE;
	}
	*n = count;
	return GPUIR_CUDA_OK;
}

/*
 * gpuir_cuda_device_info: name, memory and compute capability of device
 * dev; see gpuir_cuda.h.
 */
extern "C" gpuir_cuda_status
gpuir_cuda_device_info(int dev, char *name, size_t namelen, size_t *total_mem,
					   int *cc_major, int *cc_minor)
{
	cudaDeviceProp prop;
	int			count = 0;
	gpuir_cuda_status st;

	if (name != NULL && namelen > 0)
		name[0] = '\0';
	st = gpuir_cuda_device_count(&count);
	if (st != GPUIR_CUDA_OK)
		return st;
	if (dev < 0 || dev >= count)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	st = gpuir_cuda_check(cudaGetDeviceProperties(&prop, dev));
	if (st != GPUIR_CUDA_OK)
		return st;
	if (name != NULL && namelen > 0)
	{
		size_t		len = strnlen(prop.name, sizeof(prop.name));

		if (len > namelen - 1)
			len = namelen - 1;
		memcpy(name, prop.name, len);
		name[len] = '\0';
	}
	if (total_mem != NULL)
		*total_mem = prop.totalGlobalMem;
	if (cc_major != NULL)
		*cc_major = prop.major;
	if (cc_minor != NULL)
		*cc_minor = prop.minor;
	return GPUIR_CUDA_OK;
}

/* gpuir_cuda_set_device: the calling thread's current device; see gpuir_cuda.h */
extern "C" gpuir_cuda_status
gpuir_cuda_set_device(int dev)
{
	int			count = 0;
	gpuir_cuda_status st;

	st = gpuir_cuda_device_count(&count);
	if (st != GPUIR_CUDA_OK)
		return st;
	if (dev < 0 || dev >= count)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	return gpuir_cuda_check(cudaSetDevice(dev));
}
