/* corprof prelude stand-in for corerror.h: the few codes cor.h's inline helpers mention. */
#ifndef CORPROF_CORERROR_H
#define CORPROF_CORERROR_H
#define S_OK ((HRESULT)0)
#define S_FALSE ((HRESULT)1)
#define SUCCEEDED(hr) (((HRESULT)(hr)) >= 0)
#define FAILED(hr) (((HRESULT)(hr)) < 0)
#define META_E_BAD_SIGNATURE ((HRESULT)0x80131192)
#endif
