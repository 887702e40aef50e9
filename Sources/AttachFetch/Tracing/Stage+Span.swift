internal import Tracing

extension Stage {
    /// The stage's span name: `attach_fetch.` and its name in snake case
    /// (`attach_fetch.convert_image`, `attach_fetch.transcode`, `attach_fetch.publish_to_store`).
    static func spanName(for name: String) -> String {
        var snake = ""
        for character in name {
            if character == " " { snake += "_" } else if character.isUppercase { snake += "_" + character.lowercased() } else { snake.append(character) }
        }
        return "attach_fetch." + snake
    }

    /// A span for this stage, a child of the task's current context (the attachment's work).
    func startSpan() -> any Span {
        InstrumentationSystem.tracer.startSpan(spanName)
    }

    /// `reason` stopped the attachment in this stage: recorded on its span, then returned.
    static func failed(_ reason: Reason, _ span: any Span) -> Reason {
        if span.isRecording {
            span.attributes["error.type"] = reason.code.rawValue
            span.setStatus(SpanStatus(code: .error, message: reason.code.rawValue))
        }
        return reason
    }
}
