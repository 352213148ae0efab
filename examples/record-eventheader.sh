#!/bin/sh
# How examples/eventheader.data was made (as root, on a kernel with user_events;
# here: tests/vm/run.sh 'sh examples/record-eventheader.sh $EHTOOL_GUEST_OUT/eventheader.data').
out=${1:-eventheader.data}
REQUEST='{"provider": "MyProvider", "event": "Request", "level": 4, "keyword": 2, "opcode": 1, "activity": "6f1c1f5e-5b9e-4a1e-9a43-1d9f2b7c0a11", "fields": [["url", "str", "/index.html"], ["status", "u16", 200], ["client", "struct", [["ip", "ipv4", "10.0.0.7"], ["port", "port", 51234]]], ["elapsed", "f64", 0.0125]]}'
export REQUEST
exec ehtool record -o "$out" MyProvider_L5K1 MyProvider_L3K1 MyProvider_L4K2 -- sh -c '
  ehtool write MyProvider Started version=1.2 pid:pid=$$ ports:port[]=80,443
  ehtool write --level warning MyProvider Failed errno:errno=ENOENT path=/etc/x.conf
  echo "$REQUEST" | ehtool write --batch
'
