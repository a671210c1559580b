#ifndef CTRACERTESSERACT_SHIM_H
#define CTRACERTESSERACT_SHIM_H

// Leptonica first: Tesseract's C API refers to its Pix.
#include <leptonica/allheaders.h>
#include <tesseract/capi.h>

// OpenMP's runtime (libgomp, which libtesseract links): with nesting levels at 0 Tesseract runs
// on the calling thread only, which is faster per page on a small machine than its default team.
// OMP_THREAD_LIMIT set from inside the process comes too late; this call, made before the first
// recognition, does not.
extern void omp_set_max_active_levels(int max_levels);

static const int CTracerTesseract_IFF_UNKNOWN = IFF_UNKNOWN;
static const int CTracerTesseract_IFF_PNG = IFF_PNG;
static const int CTracerTesseract_IFF_JPEG = IFF_JFIF_JPEG;
static const int CTracerTesseract_IFF_TIFF = IFF_TIFF;
static const int CTracerTesseract_IFF_WEBP = IFF_WEBP;
static const int CTracerTesseract_SEVERITY_NONE = L_SEVERITY_NONE;

#endif
