#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# check.sh MODULES DASHBOARD.json...: each dashboard type-checked by tsc
# against Grafana's own Dashboard type (@grafana/schema, generated from
# Grafana's schema), as an object literal: a field of the wrong type, a
# value outside its enum or union, or a field the schema does not have is
# an error. MODULES: the node_modules of this directory's lock file.
set -eu
modules=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ln -s "$modules" "$dir/node_modules"
for f; do
	n=$(basename "$f" .json | tr -c 'A-Za-z0-9_\n' _)
	{
		printf "import type { Dashboard } from '@grafana/schema';\n"
		printf 'export const dashboard: Dashboard = '
		cat "$f"
		printf ';\n'
	} > "$dir/$n.ts"
done
cat > "$dir/tsconfig.json" <<'EOT'
{
  "compilerOptions": {
    "strict": true, "noEmit": true, "target": "ES2020", "module": "ES2020",
    "moduleResolution": "node", "skipLibCheck": true, "types": []
  },
  "include": ["*.ts"]
}
EOT
"$modules/.bin/tsc" -p "$dir/tsconfig.json"
