#!/usr/bin/env bash
# Reference for bench/scope.py: scope freeze done in bash, as seed 004 describes it
# (ids sorted to a file, md5sum of each spec -> task_id:md5 lines; the check regenerates
# both and compares with comm -13 / comm -23 and a diff of the hashes).
#
# usage: scope_reference.sh freeze|check RUN_DIR TASKS_JSONL REPO_ROOT [batched|per-task]
#   TASKS_JSONL  the backlog as `task _export-json` prints it (jq reads id, spec, status)
#   batched      one `xargs md5sum` over all spec files (the fastest honest bash)
#   per-task     the seed's literal loop: one `md5sum` per task
# Status changes are ignored, deleted tasks are absent. Spec files must exist (bench only).
set -euo pipefail
export LC_ALL=C
mode=$1 run=$2 tasks=$3 root=$4 style=${5:-batched}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

jq -r 'select(.status != "deleted") | [.id, (.spec // "")] | @tsv' "$tasks" > "$tmp/tasks.tsv"
cut -f1 "$tmp/tasks.tsv" | sort > "$tmp/ids"
awk -F'\t' '$2 != ""' "$tmp/tasks.tsv" > "$tmp/with_spec.tsv"
if [ "$style" = per-task ]; then
    while IFS=$'\t' read -r id spec; do
        echo "$id:$(md5sum < "$root/$spec" | cut -d' ' -f1)"
    done < "$tmp/with_spec.tsv" | sort > "$tmp/hashes"
else
    cut -f2 "$tmp/with_spec.tsv" | (cd "$root" && xargs -r -d '\n' md5sum --) | cut -c1-32 \
        | paste -d: <(cut -f1 "$tmp/with_spec.tsv") - | sort > "$tmp/hashes"
fi

if [ "$mode" = freeze ]; then
    mkdir -p "$run"
    cp "$tasks" "$run/scope.json"
    mv "$tmp/ids" "$run/scope_task_ids.txt"
    mv "$tmp/hashes" "$run/scope_spec_hashes.txt"
    exit 0
fi
added=$(comm -13 "$run/scope_task_ids.txt" "$tmp/ids" | wc -l)
removed=$(comm -23 "$run/scope_task_ids.txt" "$tmp/ids" | wc -l)
modified=$(diff "$run/scope_spec_hashes.txt" "$tmp/hashes" | grep -c '^>' || true)
if [ "$added$removed$modified" = 000 ]; then
    echo "SCOPE_UNCHANGED"
else
    echo "SCOPE_CHANGED added=$added removed=$removed modified=$modified"
fi
