# The Grafana dashboard of uid $uid from deploy/grafana/spec.json (make
# grafana): panels two to a row, each on the Prometheus data source the
# dashboard's variable picks, filtered by the instance variable.
def ds: {"type": "prometheus", "uid": "${datasource}"};

def target($i):
  {
    "refId": (.refId // ([65 + $i] | implode)),
    "datasource": ds,
    "expr": .expr,
    "legendFormat": (.legend // "__auto"),
    "range": ((.instant // false) | not),
    "instant": (.instant // false),
    "format": (.format // "time_series")
  };

def fieldconfig:
  {"defaults": {"unit": .unit}, "overrides": []}
  + (if (.type // "timeseries") == "timeseries" then
       {"defaults": {"unit": .unit, "custom": {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10, "showPoints": "never", "spanNulls": false}}}
     else {} end);

def options:
  if (.type // "timeseries") == "timeseries" then
    {"legend": {"displayMode": "table", "placement": "bottom", "showLegend": true, "calcs": ["lastNotNull", "max"]},
     "tooltip": {"mode": "multi", "sort": "desc"}}
  elif .type == "table" then {"showHeader": true, "cellHeight": "sm"}
  elif .type == "heatmap" then
    {"calculate": false, "yAxis": {"unit": .unit}, "cellGap": 1, "color": {"mode": "scheme", "scheme": "Oranges"},
     "tooltip": {"mode": "single", "yHistogram": true}}
  elif .type == "nodeGraph" then {"nodes": {"mainStatUnit": .unit}, "edges": {"mainStatUnit": .unit}}
  else {} end;

# the node graph's frames: nodes (id, title) and edges (id, source, target,
# mainstat: the bytes)
def transformations:
  if .type == "nodeGraph" then
    [{"id": "organize", "options": {"excludeByName": {"Time": true}, "renameByName": {"Value #edges": "mainstat", "Value #nodes": "arc__count"}}}]
  elif .type == "table" then
    [{"id": "organize", "options": {"excludeByName": {"Time": true, "__name__": true}}}]
  else [] end;

def panels:
  reduce .[] as $p ({"x": 0, "y": 0, "rowh": 0, "id": 1, "out": []};
    ($p.w // 12) as $w | ($p.h // 8) as $h |
    (if .x + $w > 24 then {"x": 0, "y": (.y + .rowh), "rowh": 0} else {"x": .x, "y": .y, "rowh": .rowh} end) as $at |
    .out += [{
      "id": .id,
      "type": ($p.type // "timeseries"),
      "title": $p.title,
      "description": ($p.description // ""),
      "datasource": ds,
      "gridPos": {"x": $at.x, "y": $at.y, "w": $w, "h": $h},
      "fieldConfig": ($p | fieldconfig),
      "options": ($p | options),
      "transformations": ($p | transformations),
      "targets": [$p.targets | to_entries[] | .key as $i | .value | target($i)]
    }]
    | .x = $at.x + $w | .y = $at.y | .rowh = ([$at.rowh, $h] | max) | .id += 1)
  | .out;

.dashboards[] | select(.uid == $uid) |
{
  "uid": .uid,
  "title": .title,
  "description": (.description // ""),
  "tags": ["aiscope"],
  "editable": true,
  "graphTooltip": 1,
  "schemaVersion": 39,
  "version": 1,
  "refresh": "30s",
  "time": {"from": "now-1h", "to": "now"},
  "timepicker": {},
  "timezone": "browser",
  "links": [{"title": "aiscope", "type": "dashboards", "tags": ["aiscope"], "asDropdown": true, "icon": "external link",
             "tooltip": "", "includeVars": true, "keepTime": true, "targetBlank": false}],
  "annotations": {"list": []},
  "templating": {"list": [
    {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus", "hide": 0, "refresh": 1},
    {"name": "instance", "label": "Host", "type": "query", "datasource": ds,
     "query": {"query": "label_values(aiscope_build_info, instance)", "refId": "instance"},
     "includeAll": true, "multi": true, "allValue": ".*", "refresh": 2, "sort": 1, "hide": 0}
  ]},
  "panels": (.panels | panels)
}
