//! Door 4: `Negotiated::at` takes any interface and version on trust, so it is `unsafe`.
use corprof::ProfilerInfo;
use corprof::interfaces::IMetaDataImport;

fn raw(info: &ProfilerInfo) {
    let _ = info.negotiated().at::<IMetaDataImport>(1);
}

fn main() {
    let _ = raw;
}
