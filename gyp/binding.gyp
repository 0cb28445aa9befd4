# node-gyp's build of the addon (npm run build:gyp; CI checks it against CMakeLists.txt). It lives
# here, not in the package root, where npm would run `node-gyp rebuild` on every install.
{
  "variables": {
    "zstd_dir": "<!(node ../scripts/c-sources.cjs dir zstd)",
    "blake3_dir": "<!(node ../scripts/c-sources.cjs dir blake3)",
    "sqlite_dir": "<!(node ../scripts/c-sources.cjs dir sqlite)"
  },
  "targets": [
    {
      "target_name": "layerfs_native",
      "sources": [
        "<!@(node -p \"require('fs').readdirSync('../native').filter(f => f.endsWith('.cc')).sort().map(f => '../native/' + f).join(' ')\")",
        "<(blake3_dir)/blake3.c",
        "<(blake3_dir)/blake3_dispatch.c",
        "<(blake3_dir)/blake3_portable.c",
        "<!@(node ../scripts/c-sources.cjs zstd-sources)"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "<(blake3_dir)",
        "<(zstd_dir)",
        "<(sqlite_dir)"
      ],
      "defines": [
        "NAPI_VERSION=8",
        "NAPI_CPP_EXCEPTIONS",
        "NODE_ADDON_API_DISABLE_DEPRECATED",
        "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS",
        "ZSTD_TRACE=0"
      ],
      "cflags!": ["-fno-exceptions", "-O2"],
      "cflags_cc!": ["-fno-exceptions", "-O2"],
      "cflags": ["-O3", "-fvisibility=hidden"],
      "cflags_cc": ["-std=gnu++17", "-fexceptions", "-O3", "-fvisibility=hidden"],
      "conditions": [
        ["OS=='linux'", {
          "ldflags": ["-Wl,--version-script=<!(node -p \"require('path').resolve('../native/exports.ver')\")"]
        }],
        ["target_arch=='x64' and OS!='win'", {
          "sources": [
            "<(blake3_dir)/blake3_sse2_x86-64_unix.S",
            "<(blake3_dir)/blake3_sse41_x86-64_unix.S",
            "<(blake3_dir)/blake3_avx2_x86-64_unix.S",
            "<(blake3_dir)/blake3_avx512_x86-64_unix.S",
            "<(zstd_dir)/decompress/huf_decompress_amd64.S"
          ]
        }, {
          "defines": [
            "BLAKE3_NO_SSE2",
            "BLAKE3_NO_SSE41",
            "BLAKE3_NO_AVX2",
            "BLAKE3_NO_AVX512",
            "BLAKE3_USE_NEON=0",
            "ZSTD_DISABLE_ASM"
          ]
        }]
      ]
    }
  ]
}
