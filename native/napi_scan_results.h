// scanPaths results as columns: one typed array per stat field and flat lists for the rarer
// parts, so a batch costs a few dozen Node-API calls instead of ~15 property sets per entry.
// lib/native/scan.ts turns them into entry objects (plain JS object creation is far cheaper).
#pragma once
#include <napi.h>

#include <memory>
#include <vector>

#include "scan.h"

namespace layerfs {

// Hands each result's data block to a Buffer (the result no longer owns it).
Napi::Value ScanResultsObject(Napi::Env env, std::vector<std::unique_ptr<ScanResult>>& results,
                              bool xattrs);

}  // namespace layerfs
