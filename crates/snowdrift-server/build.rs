//! Compiles `proto/snowdrift.proto` (at the repository root) into the gRPC server and client
//! with protox, a protobuf compiler in Rust, so building needs no `protoc`; also writes the
//! encoded descriptor set that the reflection service serves.

use std::path::PathBuf;

use protox::prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let proto = proto_dir.join("snowdrift.proto");
    println!("cargo:rerun-if-changed={}", proto.display());
    let fds = protox::compile([&proto], [&proto_dir])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("snowdrift_descriptor.bin"),
        fds.encode_to_vec(),
    )?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        // Clients bring their own channel (tonic's transport is not a dependency of the
        // library; the tests and examples use `tonic::transport::Channel`).
        .build_transport(false)
        .compile_fds(fds)?;
    Ok(())
}
