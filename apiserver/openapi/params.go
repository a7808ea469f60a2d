package openapi

// param is an operation parameter: a path segment or a query option.
type param struct {
	name        string
	in          string // "path" or "query"
	typ         string // JSON type: string, boolean, integer
	description string
	required    bool
}

// Path parameters.
var (
	paramName      = param{name: "name", in: "path", typ: "string", required: true, description: "name of the object"}
	paramNamespace = param{name: "namespace", in: "path", typ: "string", required: true, description: "object name and auth scope, such as for teams and projects"}
)

// Query parameters. fieldValidation on the write operations is what tells
// kubectl that this server validates fields itself, so it skips its own
// schema validation.
var (
	paramPretty          = query("pretty", "string", "If 'true', the output is pretty printed.")
	paramDryRun          = query("dryRun", "string", "When present, the request is processed but nothing is persisted. The only valid value is All: all dry run stages are run.")
	paramFieldManager    = query("fieldManager", "string", "A name for the actor or entity making these changes, at most 128 printable characters.")
	paramFieldValidation = query("fieldValidation", "string", "How the server handles unknown or duplicate fields in the request body: Ignore drops them silently, Warn drops them and returns a warning for each (the default), Strict fails the request with a BadRequest error naming them.")
	paramForce           = query("force", "boolean", "Force is meant for apply requests, which this server does not serve yet; it must be unset for other patches.")

	paramAllowWatchBookmarks  = query("allowWatchBookmarks", "boolean", "Asks the server to send BOOKMARK watch events, which carry only a resourceVersion. Ignored for lists.")
	paramContinue             = query("continue", "string", "The continue token of a previous, limited list call, to fetch the next page.")
	paramFieldSelector        = query("fieldSelector", "string", "A selector on the objects' fields; everything matches by default.")
	paramLabelSelector        = query("labelSelector", "string", "A selector on the objects' labels; everything matches by default.")
	paramLimit                = query("limit", "integer", "The most objects to return in one list call; the response's continue token fetches the rest.")
	paramResourceVersion      = query("resourceVersion", "string", "Constrains which resource versions the request may be served from; see resourceVersionMatch.")
	paramResourceVersionMatch = query("resourceVersionMatch", "string", "How resourceVersion applies to list calls: Exact or NotOlderThan.")
	paramSendInitialEvents    = query("sendInitialEvents", "boolean", "With watch=true, starts the watch with synthetic events for the current objects, followed by a bookmark.")
	paramTimeoutSeconds       = query("timeoutSeconds", "integer", "A timeout for the list or watch call, whatever the activity.")
	paramWatch                = query("watch", "boolean", "Watch for changes to the described objects and return them as a stream of add, update and remove notifications.")

	paramGracePeriodSeconds = query("gracePeriodSeconds", "integer", "Seconds before the object is deleted; zero deletes at once, unset uses the object's default.")
	paramOrphanDependents   = query("orphanDependents", "boolean", "Deprecated: use propagationPolicy. Whether dependents are orphaned.")
	paramPropagationPolicy  = query("propagationPolicy", "string", "Whether and how garbage collection handles dependents: Orphan, Background or Foreground.")

	paramLogContainer    = query("container", "string", "The container whose logs to return; may be omitted when the pod has one container.")
	paramLogFollow       = query("follow", "boolean", "Follow the log stream of the pod.")
	paramLogLimitBytes   = query("limitBytes", "integer", "The most bytes of log to return.")
	paramLogPrevious     = query("previous", "boolean", "Return the logs of the previous, terminated container instance.")
	paramLogSinceSeconds = query("sinceSeconds", "integer", "Return only logs newer than this many seconds.")
	paramLogTailLines    = query("tailLines", "integer", "The number of lines from the end of the log to return.")
	paramLogTimestamps   = query("timestamps", "boolean", "Prefix every line of log output with an RFC3339 timestamp.")
)

func query(name, typ, description string) param {
	return param{name: name, in: "query", typ: typ, description: description}
}

// Parameter sets of the verbs.
var (
	writeParams  = []param{paramPretty, paramDryRun, paramFieldManager, paramFieldValidation}
	patchParams  = append(append([]param{}, writeParams...), paramForce)
	listParams   = []param{paramPretty, paramAllowWatchBookmarks, paramContinue, paramFieldSelector, paramLabelSelector, paramLimit, paramResourceVersion, paramResourceVersionMatch, paramSendInitialEvents, paramTimeoutSeconds, paramWatch}
	deleteParams = []param{paramPretty, paramDryRun, paramGracePeriodSeconds, paramOrphanDependents, paramPropagationPolicy}
	logParams    = []param{paramLogContainer, paramLogFollow, paramLogLimitBytes, paramPretty, paramLogPrevious, paramLogSinceSeconds, paramLogTailLines, paramLogTimestamps}
)
