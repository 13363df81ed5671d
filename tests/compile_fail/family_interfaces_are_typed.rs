//! Door 4: a wrapper hands out only its own family's interfaces: a metadata vtable read from an
//! ICorProfilerInfo object would call the wrong slots.
use corprof::ProfilerInfo;
use corprof::interfaces::IMetaDataImport;

fn raw(info: &ProfilerInfo) {
    let _ = info.get::<IMetaDataImport>();
}

fn main() {
    let _ = raw;
}
