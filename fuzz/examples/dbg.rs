fn main() {
    let path = std::env::args().nth(2).unwrap();
    let target = std::env::args().nth(1).unwrap();
    let data = std::fs::read(path).unwrap();
    match target.as_str() {
        "http_sse" => smthrs_mcp_fuzz::http_sse::check(&data),
        "redaction" => smthrs_mcp_fuzz::redaction::check(&data),
        "catalog_page" => smthrs_mcp_fuzz::catalog_page::check(&data),
        "jsonrpc_classify" => smthrs_mcp_fuzz::jsonrpc_classify::check(&data),
        "server_file" => smthrs_mcp_fuzz::server_file::check(&data),
        "line_framer" => smthrs_mcp_fuzz::line_framer::check(&data),
        _ => panic!(),
    }
    println!("ok");
}
