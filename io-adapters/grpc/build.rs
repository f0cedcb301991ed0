//! Generates the tonic service traits of `google.bigtable.v2.Bigtable`,
//! `google.bigtable.admin.v2.BigtableTableAdmin` and `google.bigtable.admin.v2.BigtableInstanceAdmin`
//! from the vendored protos in `proto/`, with protox (a pure-Rust proto compiler, so no
//! `protoc`). Only the server side is generated, and every message package maps to the
//! pre-generated `googleapis-tonic-*` crates the client side uses, so both sides share one set of
//! message types — except the admin replies holding maps, which map to `crate::wire`'s encoders
//! (prost leaves out a map entry's value when it is the default message; production does not).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const DATA: &str = "::googleapis_tonic_google_bigtable_v2::google";
    const ADMIN: &str = "::googleapis_tonic_google_bigtable_admin_v2::google";
    println!("cargo:rerun-if-changed=proto");
    let files = protox::compile(
        [
            "google/bigtable/v2/bigtable.proto",
            "google/bigtable/admin/v2/bigtable_table_admin.proto",
            "google/bigtable/admin/v2/bigtable_instance_admin.proto",
        ],
        ["proto"],
    )?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        // Calls rowkit does not serve (change streams, SQL, backups, …) answer UNIMPLEMENTED.
        .generate_default_stubs(true)
        .extern_path(".google.bigtable.v2", format!("{DATA}::bigtable::v2"))
        // The longest matching path wins, so only these two replies leave the crate's types.
        .extern_path(".google.bigtable.admin.v2.Table", "crate::wire::TableReply")
        .extern_path(
            ".google.bigtable.admin.v2.ListTablesResponse",
            "crate::wire::ListTablesReply",
        )
        .extern_path(
            ".google.bigtable.admin.v2",
            format!("{ADMIN}::bigtable::admin::v2"),
        )
        .extern_path(".google.rpc", format!("{DATA}::rpc"))
        .extern_path(".google.api", format!("{DATA}::api"))
        .extern_path(".google.type", format!("{ADMIN}::r#type"))
        .extern_path(".google.iam.v1", format!("{ADMIN}::iam::v1"))
        .extern_path(".google.longrunning", format!("{ADMIN}::longrunning"))
        .compile_fds(files)?;
    Ok(())
}
