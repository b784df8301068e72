#!/bin/bash
# The commands of the mcd-inject step (mcd-inject-ref.yaml): the release's config for
# the job's bootimage into SHARED_DIR, the report into ARTIFACT_DIR. CLUSTER_PROFILE_DIR
# may hold the pull secret, as the step registry mounts it.
set -euo pipefail
release=${MCD_INJECT_RELEASE:-${RELEASE_IMAGE_LATEST:?no MCD_INJECT_RELEASE and no RELEASE_IMAGE_LATEST}}
auth=()
if [[ -n ${CLUSTER_PROFILE_DIR:-} && -r $CLUSTER_PROFILE_DIR/pull-secret ]]; then
  auth=(--authfile "$CLUSTER_PROFILE_DIR/pull-secret")
fi
mcd-inject inject --release "$release" "${auth[@]}" \
  --bootimage "${MCD_INJECT_BOOTIMAGE:-4.2}" \
  --ign "$SHARED_DIR/${MCD_INJECT_OUTPUT:-worker.ign}" \
  --json-out "$ARTIFACT_DIR/mcd-inject.json"
