//! Replays a folder through one target natively (no sanitizer): `replay <target> <dir|file>...`.
fn main() {
    let mut args = std::env::args().skip(1);
    let target = args.next().expect("target");
    let check: fn(&[u8]) = match target.as_str() {
        "line_framer" => smthrs_mcp_fuzz::line_framer::check,
        "jsonrpc_classify" => smthrs_mcp_fuzz::jsonrpc_classify::check,
        "catalog_page" => smthrs_mcp_fuzz::catalog_page::check,
        "http_sse" => smthrs_mcp_fuzz::http_sse::check,
        "server_file" => smthrs_mcp_fuzz::server_file::check,
        "redaction" => smthrs_mcp_fuzz::redaction::check,
        "www_authenticate" => smthrs_mcp_fuzz::www_authenticate::check,
        "input_requests" => smthrs_mcp_fuzz::input_requests::check,
        "skill_frontmatter" => smthrs_mcp_fuzz::skill_frontmatter::check,
        "resource_contents" => smthrs_mcp_fuzz::resource_contents::check,
        "change_notification" => smthrs_mcp_fuzz::change_notification::check,
        "token_exchange" => smthrs_mcp_fuzz::token_exchange::check,
        other => panic!("unknown target {other}"),
    };
    let mut files = Vec::new();
    for arg in args {
        let path = std::path::PathBuf::from(arg);
        if path.is_dir() {
            files.extend(
                std::fs::read_dir(&path)
                    .unwrap()
                    .flatten()
                    .map(|e| e.path()),
            );
        } else {
            files.push(path);
        }
    }
    files.sort();
    let started = std::time::Instant::now();
    for file in &files {
        if std::panic::catch_unwind(|| check(&std::fs::read(file).unwrap())).is_err() {
            println!("FAIL {}", file.display());
        }
    }
    println!("{} inputs in {:?}", files.len(), started.elapsed());
}
