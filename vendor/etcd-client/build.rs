//! snowdrift's one change to etcd-client 0.21.1: the .proto files are compiled by protox, a
//! protobuf compiler written in Rust, and handed to tonic as a descriptor set, so the build
//! needs no `protoc` on the machine. The generated code is the same: tonic-prost-build gets
//! the same files and options as upstream's `compile_protos`.

#[cfg(feature = "build-server")]
fn should_build_server() -> bool {
    true
}

#[cfg(not(feature = "build-server"))]
fn should_build_server() -> bool {
    false
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = "proto";
    println!("cargo:rerun-if-changed={proto_root}");

    let files = [
        "proto/etcd/api/authpb/auth.proto",
        "proto/etcd/api/etcdserverpb/rpc.proto",
        "proto/etcd/api/mvccpb/kv.proto",
        "proto/etcd/server/etcdserver/api/v3election/v3electionpb/v3election.proto",
        "proto/etcd/server/etcdserver/api/v3lock/v3lockpb/v3lock.proto",
    ];
    let fds = protox::compile(files, [proto_root])?;
    tonic_prost_build::configure()
        .build_server(should_build_server())
        .compile_fds(fds)?;
    Ok(())
}
