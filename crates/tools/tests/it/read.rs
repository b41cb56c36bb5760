use gyre_tools::ToolError;
use serde_json::json;

use crate::Fixture;

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn reads_numbered_lines_with_a_title() {
    let fx = Fixture::new();
    fx.write("src/lib.rs", "fn a() {}\n\tindented\r\nlast");
    let out = fx
        .call("read", json!({"file_path": "src/lib.rs"}))
        .await
        .unwrap();
    assert_eq!(
        crate::text(&out),
        "     1\tfn a() {}\n     2\t\tindented\n     3\tlast\n"
    );
    assert_eq!(out.title, "read src/lib.rs (lines 1-3 of 3)");
}

#[tokio::test]
async fn offset_and_limit_select_a_window() {
    let fx = Fixture::new();
    fx.write("a.txt", numbered(300));
    let out = fx
        .call(
            "read",
            json!({"file_path": "a.txt", "offset": 120, "limit": 3}),
        )
        .await
        .unwrap();
    assert_eq!(out.title, "read a.txt (lines 120-122 of 300)");
    assert_eq!(
        crate::text(&out),
        "   120\tline 120\n   121\tline 121\n   122\tline 122\n\n\
         [showing lines 120-122 of 300; call read with offset=123 to continue]"
    );
}

#[tokio::test]
async fn a_long_file_says_how_to_read_further() {
    let fx = Fixture::new();
    fx.write("big.txt", numbered(2500));
    let text = fx.ok("read", json!({"file_path": "big.txt"})).await;
    assert!(text.starts_with("     1\tline 1\n"));
    assert!(text.contains("  2000\tline 2000\n"));
    assert!(!text.contains("line 2001\n"));
    assert!(
        text.ends_with("[showing lines 1-2000 of 2500; call read with offset=2001 to continue]")
    );
}

#[tokio::test]
async fn output_budget_cuts_on_a_line_and_gives_the_next_offset() {
    let fx = Fixture::new();
    let wide: String = (1..=2000)
        .map(|i| format!("{i:04} {}\n", "x".repeat(95)))
        .collect();
    fx.write("wide.txt", wide);
    let text = fx.ok("read", json!({"file_path": "wide.txt"})).await;
    assert!(text.len() < 52_000, "{}", text.len());
    let note = text.lines().last().unwrap();
    assert!(note.contains("output size limit reached"), "{note}");
    let shown = text.lines().filter(|l| l.contains('\t')).count();
    assert!(note.contains(&format!("offset={}", shown + 1)), "{note}");
}

#[tokio::test]
async fn long_lines_are_cut_with_a_marker() {
    let fx = Fixture::new();
    fx.write("min.js", format!("{}\nshort\n", "é".repeat(5000)));
    let text = fx.ok("read", json!({"file_path": "min.js"})).await;
    let first = text.lines().next().unwrap();
    assert!(first.ends_with(" [... line cut at 2000 characters]"));
    assert_eq!(first.chars().filter(|&c| c == 'é').count(), 2000);
    assert!(text.contains("     2\tshort\n"));
}

#[tokio::test]
async fn bad_targets_give_clear_errors() {
    let fx = Fixture::new();
    fx.write("dir/file.txt", "x");
    fx.write(
        "image.bin",
        [0x89, b'P', b'N', b'G', 0, 0, 0, 13, 0, 1, 2, 3],
    );

    let err = fx.err("read", json!({"file_path": "missing.txt"})).await;
    assert!(matches!(err, ToolError::NotFound { .. }));
    assert_eq!(
        err.to_string(),
        "`missing.txt` does not exist; check the path (glob or ls can find files)"
    );
    let err = fx.err("read", json!({"file_path": "dir"})).await;
    assert!(matches!(err, ToolError::IsADirectory { .. }));
    assert!(err.to_string().contains("is a directory"), "{err}");
    assert!(err.to_string().contains("use ls"), "{err}");
    let err = fx.err("read", json!({"file_path": "image.bin"})).await;
    assert!(matches!(err, ToolError::Binary { .. }), "{err}");
    assert!(err.to_string().contains("binary"), "{err}");
}

#[tokio::test]
async fn empty_files_and_offsets_past_the_end() {
    let fx = Fixture::new();
    fx.write("empty.txt", "");
    fx.write("three.txt", numbered(3));
    assert_eq!(
        fx.ok("read", json!({"file_path": "empty.txt"})).await,
        "(the file is empty)"
    );
    let err = fx
        .err("read", json!({"file_path": "three.txt", "offset": 10}))
        .await
        .to_string();
    assert_eq!(
        err,
        "invalid arguments for `read`: offset 10 is past the end of `three.txt`, which has 3 lines"
    );
    let err = fx
        .err("read", json!({"file_path": "three.txt", "limit": 0}))
        .await;
    assert!(matches!(err, ToolError::InvalidArguments(_)));
}

#[tokio::test]
async fn pipes_are_refused_instead_of_blocking() {
    let fx = Fixture::new();
    let status = std::process::Command::new("mkfifo")
        .arg(fx.path("fifo"))
        .status()
        .unwrap();
    assert!(status.success());
    for (tool, args) in [
        ("read", json!({"file_path": "fifo"})),
        ("write", json!({"file_path": "fifo", "content": "x"})),
        (
            "edit",
            json!({"file_path": "fifo", "old_string": "x", "new_string": "y"}),
        ),
    ] {
        let err = fx.err(tool, args).await.to_string();
        assert!(err.contains("is not a regular file"), "{tool}: {err}");
    }
}

const PNG_MAGIC: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

fn png(extra: usize) -> Vec<u8> {
    let mut bytes = PNG_MAGIC.to_vec();
    bytes.extend((0..extra).map(|i| (i % 251) as u8));
    bytes
}

#[tokio::test]
async fn images_come_back_as_image_parts() {
    use base64::Engine;
    use gyre_protocol::ToolResultContent;

    let fx = Fixture::new();
    let bytes = png(100);
    fx.write("pic.png", &bytes);
    fx.write("anim.bin", b"GIF89a\x01\x00\x01\x00\x00\x00\x00");
    let out = fx
        .call("read", json!({"file_path": "pic.png"}))
        .await
        .unwrap();
    assert_eq!(out.title, "read pic.png (image/png, 108 bytes)");
    match out.content.as_slice() {
        [
            ToolResultContent::Text { text },
            ToolResultContent::Image { media_type, data },
        ] => {
            assert_eq!(text, "image pic.png (image/png, 108 bytes)");
            assert_eq!(media_type, "image/png");
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap();
            assert_eq!(decoded, bytes);
        }
        other => panic!("{other:?}"),
    }
    // Known by content, not by name.
    let out = fx
        .call("read", json!({"file_path": "anim.bin"}))
        .await
        .unwrap();
    assert_eq!(out.title, "read anim.bin (image/gif, 13 bytes)");
}

#[tokio::test]
async fn images_are_refused_for_models_without_vision_and_when_too_large() {
    let mut fx = Fixture::new();
    fx.write("pic.png", png(10));
    fx.write("huge.png", png(3_800_000));
    let err = fx.err("read", json!({"file_path": "huge.png"})).await;
    let message = err.to_string();
    assert!(
        message.contains("is an image (image/png) of 3800008 bytes"),
        "{message}"
    );
    assert!(message.contains("more than read returns"), "{message}");

    fx.ctx.images = gyre_tools::ImageSupport::NotAccepted;
    let err = fx.err("read", json!({"file_path": "pic.png"})).await;
    let message = err.to_string();
    assert!(
        message.contains(
            "`pic.png` is an image (image/png), and the current model does not take images"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn reading_records_the_file_for_later_changes() {
    let fx = Fixture::new();
    fx.write("a.txt", "x\n");
    let files = &fx.ctx.session.files;
    assert!(files.get(&fx.path("a.txt")).is_none());
    fx.ok("read", json!({"file_path": "a.txt", "limit": 1}))
        .await;
    let seen = files.get(&fx.path("a.txt")).unwrap();
    assert_eq!(seen.stamp.len, 2);
    assert_eq!(
        seen.content_hash,
        Some(gyre_tools::ContentHasher::of(b"x\n"))
    );
    // Refused reads record nothing.
    fx.write("bin", [0u8, 159, 146, 150]);
    let _ = fx.err("read", json!({"file_path": "bin"})).await;
    assert!(files.get(&fx.path("bin")).is_none());
}

#[tokio::test]
async fn the_hash_covers_the_whole_file_whatever_the_window() {
    let fx = Fixture::new();
    let big = numbered(30_000);
    fx.write("big.txt", &big);
    fx.ok(
        "read",
        json!({"file_path": "big.txt", "offset": 10, "limit": 5}),
    )
    .await;
    let seen = fx.ctx.session.files.get(&fx.path("big.txt")).unwrap();
    assert_eq!(
        seen.content_hash,
        Some(gyre_tools::ContentHasher::of(big.as_bytes()))
    );
}
