module github.com/rvtrace/rvtrace

go 1.26.8

require (
	github.com/chzyer/readline v1.5.1 // indirect
	github.com/google/pprof v0.0.0-20260906184651-6331bc6350fe // indirect
	github.com/ianlancetaylor/demangle v0.0.0-20250417193237-f615e6bd150b // indirect
	golang.org/x/arch v0.32.0 // indirect
	golang.org/x/sys v0.32.0 // indirect
)
