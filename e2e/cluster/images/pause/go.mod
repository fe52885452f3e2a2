module auo.local/pause

go 1.22
