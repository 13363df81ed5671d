/* corprof prelude: the Windows/MIDL vocabulary corprof.h expects, written for clang on Linux.
 * Force-included (-include) before the header; works in C and C++ mode.
 * SAL macros become clang `annotate` attributes so the generator can read them. */
#ifndef CORPROF_PRELUDE_H
#define CORPROF_PRELUDE_H

#include <stdint.h>
#include <stddef.h>

typedef uint8_t BYTE;
typedef uint8_t UINT8;
typedef uint16_t UINT16;
typedef int8_t INT8;
typedef int16_t INT16;
typedef uint16_t WORD;
typedef uint16_t USHORT;
typedef uint32_t DWORD;
typedef uint32_t ULONG;
typedef int32_t LONG;
typedef int32_t LONG32;
typedef uint32_t ULONG32;
typedef int32_t INT;
typedef int32_t INT32;
typedef uint32_t UINT;
typedef uint32_t UINT32;
typedef int64_t INT64;
typedef uint64_t UINT64;
typedef uint64_t ULONG64;
typedef int64_t LONGLONG;
typedef uint64_t ULONGLONG;
typedef uintptr_t UINT_PTR;
typedef intptr_t INT_PTR;
typedef uintptr_t ULONG_PTR;
typedef size_t SIZE_T;
typedef int32_t BOOL;
typedef int32_t HRESULT;
typedef char CHAR;
#ifdef __cplusplus
typedef char16_t WCHAR;
#else
typedef uint16_t WCHAR;
#endif
typedef WCHAR *LPWSTR;
typedef const WCHAR *LPCWSTR;
typedef char *LPSTR;
typedef const char *LPCSTR;
typedef void *LPVOID;
typedef void *PVOID;
typedef const void *LPCVOID;
typedef void *HANDLE;
typedef void *RPC_IF_HANDLE;

typedef struct _GUID {
    uint32_t Data1;
    uint16_t Data2;
    uint16_t Data3;
    uint8_t Data4[8];
} GUID;
typedef GUID IID;
typedef GUID CLSID;
typedef const GUID *LPCGUID;
#ifdef __cplusplus
#define REFGUID const GUID &
#define REFIID const IID &
#define REFCLSID const CLSID &
#define EXTERN_C extern "C"
#else
#define REFGUID const GUID *
#define REFIID const IID *
#define REFCLSID const CLSID *
#define EXTERN_C extern
#endif


/* Calling conventions: on x86-64 Linux there is only one. */
#define __stdcall
#define STDMETHODCALLTYPE
#define STDAPICALLTYPE

/* MIDL vocabulary. The IID travels as an annotation on the C++ interface struct. */
#define interface struct
#define DECLSPEC_UUID(x) __attribute__((annotate("corprof_iid:" x)))
#define DECLSPEC_NOVTABLE
#define MIDL_INTERFACE(x) struct DECLSPEC_UUID(x) DECLSPEC_NOVTABLE
#define BEGIN_INTERFACE
#define END_INTERFACE
#define CONST_VTBL
#define __RPCNDR_H_VERSION__ 500
#define COM_NO_WINDOWS_H

/* cor.h vocabulary: GUID constants and interfaces declared through macros. A GUID's parts
 * travel as an annotation on its declaration; interfaces get their IID from `IID_<name>`. */
#define EXTERN_GUID(name, l, w1, w2, b1, b2, b3, b4, b5, b6, b7, b8) \
    EXTERN_C const GUID name __attribute__((annotate("corprof_guid:" #l "," #w1 "," #w2 "," #b1 "," #b2 "," #b3 "," #b4 "," #b5 "," #b6 "," #b7 "," #b8)))
#define DECLARE_INTERFACE_(iface, base) struct iface : public base
#define DECLARE_INTERFACE(iface) struct iface
#define STDMETHOD(method) virtual HRESULT STDMETHODCALLTYPE method
#define STDMETHOD_(type, method) virtual type STDMETHODCALLTYPE method
#define PURE = 0
#define THIS_
#define THIS void

/* SAL: kept as machine-readable annotations, argument text included. */
#define CORPROF_SAL(text) __attribute__((annotate("corprof_sal:" text)))
#define _In_ CORPROF_SAL("_In_")
#define _In_opt_ CORPROF_SAL("_In_opt_")
#define _Out_ CORPROF_SAL("_Out_")
#define _Out_opt_ CORPROF_SAL("_Out_opt_")
#define _Inout_ CORPROF_SAL("_Inout_")
#define _COM_Outptr_ CORPROF_SAL("_COM_Outptr_")
#define _Outptr_ CORPROF_SAL("_Outptr_")
#define _In_reads_(n) CORPROF_SAL("_In_reads_(" #n ")")
#define _In_reads_opt_(n) CORPROF_SAL("_In_reads_opt_(" #n ")")
#define _In_reads_bytes_(n) CORPROF_SAL("_In_reads_bytes_(" #n ")")
#define _Out_writes_(n) CORPROF_SAL("_Out_writes_(" #n ")")
#define _Out_writes_opt_(n) CORPROF_SAL("_Out_writes_opt_(" #n ")")
#define _Out_writes_to_(cap, len) CORPROF_SAL("_Out_writes_to_(" #cap "," #len ")")
#define _Out_writes_bytes_(n) CORPROF_SAL("_Out_writes_bytes_(" #n ")")
#define _Inout_updates_(n) CORPROF_SAL("_Inout_updates_(" #n ")")
#define _Out_writes_to_opt_(cap, len) CORPROF_SAL("_Out_writes_to_opt_(" #cap "," #len ")")
#define _Out_writes_bytes_to_(cap, len) CORPROF_SAL("_Out_writes_bytes_to_(" #cap "," #len ")")
#define _Out_writes_bytes_to_opt_(cap, len) CORPROF_SAL("_Out_writes_bytes_to_opt_(" #cap "," #len ")")
#define _Out_writes_bytes_opt_(n) CORPROF_SAL("_Out_writes_bytes_opt_(" #n ")")
#define _In_reads_bytes_opt_(n) CORPROF_SAL("_In_reads_bytes_opt_(" #n ")")
#define _In_z_ CORPROF_SAL("_In_z_")
#define _In_opt_z_ CORPROF_SAL("_In_opt_z_")
#define _Outptr_opt_ CORPROF_SAL("_Outptr_opt_")
#define _Outptr_result_maybenull_ CORPROF_SAL("_Outptr_result_maybenull_")
#define _Deref_out_ CORPROF_SAL("_Deref_out_")
#define _Inout_opt_ CORPROF_SAL("_Inout_opt_")
#define _Out_range_(lo, hi)
#define _Pre_notnull_
#define _Post_z_
#define __RPC__in
#define __RPC__out

/* COM vocabulary cor.h mentions only by pointer. VARIANT's layout does not matter to us:
 * it is only passed by pointer, so an opaque 24-byte struct stands in. */
typedef struct { uint64_t corprof_opaque[3]; } VARIANT; /* untagged: bindgen names it VARIANT */
#define UNALIGNED
#ifdef __cplusplus
struct IStream;
struct ISequentialStream;
struct ITypeInfo;
#else
typedef struct ITypeInfo ITypeInfo;
typedef struct IStream IStream;
typedef struct ISequentialStream ISequentialStream;
#endif

#endif
