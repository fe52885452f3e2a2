module auo.local/agent-wget

go 1.22
