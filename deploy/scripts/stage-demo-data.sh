#!/usr/bin/env bash
# Stage the demo's encoder variants and the CURRENT version of each demo bundle into
# build/deploy/demo-data/{variants,bundles} for the demo image (deploy/docker/Dockerfile, target
# demo). Links are resolved (a variant may link to models/); older versions are left out.
# Usage: deploy/scripts/stage-demo-data.sh ARTIFACTS_DIR
set -euo pipefail
artifacts=$1
out=build/deploy/demo-data
rm -rf "$out"
mkdir -p "$out/variants" "$out/bundles"
for variant in "$artifacts"/variants/*/; do
    [[ -f "$variant/variant.json" ]] || continue
    cp -rL "$variant" "$out/variants/$(basename "$variant")"
done
for bundle in "$artifacts"/bundles/*/; do
    [[ -f "$bundle/CURRENT" ]] || continue
    name=$(basename "$bundle")
    version=$(tr -d '[:space:]' <"$bundle/CURRENT")
    mkdir -p "$out/bundles/$name"
    cp -r "$bundle/$version" "$out/bundles/$name/$version"
    cp "$bundle/CURRENT" "$out/bundles/$name/CURRENT"
done
chmod -R a+rX "$out"
echo "staged $(ls "$out/variants" | wc -l) variants and $(ls "$out/bundles" | wc -l) bundles ($(du -sh "$out" | cut -f1)) in $out"
