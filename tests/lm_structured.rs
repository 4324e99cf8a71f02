//! Structured output (`mlx_lm::structured`): generation under a JSON schema, a regex and a
//! Lark grammar with random-weight models and their byte-level BPE tokenizer. The text must
//! parse and validate against the schema (checked by the `jsonschema` crate, not by the
//! grammar engine that produced it), greedy and sampled, through `generate` and through the
//! continuous-batching `Engine` with constrained and unconstrained rows in one compiled
//! step (traced once); a row without a grammar decodes exactly what it decodes alone.
//! A random model left alone writes no JSON, so a mask that is not applied fails these.

mod support;

use std::collections::{BTreeSet, HashMap};

use mlx::lm::structured::{ConstraintFactory, ResponseFormat};
use mlx::lm::{
    generate, load, Engine, EngineOptions, FinishReason, GenerateOptions, LoadOptions, Model,
    RequestOptions, SamplerOptions, Tokenizer,
};
use serde_json::{json, Value};
use support::lm::model_dir;

fn load_named(name: &str) -> (Model, Tokenizer) {
    let (model, tokenizer, _) = load(model_dir(name), LoadOptions::default()).unwrap();
    (model, tokenizer)
}

/// Every value bounded (string lengths, integer range, closed object), so any path
/// through the grammar ends within a few dozen tokens; whitespace off for the same reason
/// (llguidance's default allows any run of it between tokens).
fn person_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 6},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "pet": {"enum": ["cat", "dog", null]},
            "tags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3},
        },
        "required": ["name", "age", "pet", "tags"],
        "additionalProperties": false,
        "x-guidance": {"whitespace_flexible": false},
    })
}

fn assert_valid(schema: &Value, text: &str) {
    let value: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text:?}"));
    let mut plain = schema.clone();
    plain.as_object_mut().unwrap().remove("x-guidance");
    let validator = jsonschema::validator_for(&plain).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{text} does not validate: {errors:?}");
}

fn prompt(tokenizer: &Tokenizer, text: &str) -> Vec<u32> {
    tokenizer.encode(text, false).unwrap()
}

#[test]
fn generate_follows_a_json_schema_greedy_and_sampled() {
    for name in ["qwen3", "llama3"] {
        let (model, tokenizer) = load_named(name);
        let factory = ConstraintFactory::new(&tokenizer, model.vocab_size() as usize).unwrap();
        let schema = person_schema();
        let constraint = factory.json_schema(&schema, true).unwrap();
        // Without the grammar the same prompt gives no JSON: the mask is what makes it.
        let free = GenerateOptions {
            max_tokens: 40,
            ..Default::default()
        };
        let free_text =
            generate(&model, &tokenizer, &prompt(&tokenizer, "a person:"), &free).unwrap();
        assert!(
            serde_json::from_str::<Value>(&free_text).is_err(),
            "{free_text:?}"
        );

        let mut texts = Vec::new();
        for sampler in [
            SamplerOptions::default(),
            SamplerOptions {
                temperature: 1.0,
                ..Default::default()
            },
            SamplerOptions {
                temperature: 0.8,
                top_p: 0.9,
                top_k: 50,
                ..Default::default()
            },
        ] {
            for seed in 0..3 {
                let options = GenerateOptions {
                    max_tokens: 200,
                    sampler,
                    seed: Some(seed),
                    constraint: Some(constraint.clone()),
                    stop_tokens: tokenizer.eos_token_ids(),
                    ..Default::default()
                };
                let ids = prompt(&tokenizer, "a person:");
                let mut text = String::new();
                let mut last = None;
                let mut stream =
                    mlx::lm::stream_generate(&model, &tokenizer, &ids, &options).unwrap();
                for r in stream.by_ref() {
                    let r = r.unwrap();
                    text.push_str(&r.text);
                    last = r.finish_reason;
                }
                // Every mask went through the one compiled step.
                assert_eq!(stream.tokens().traces(), 1);
                assert_eq!(last, Some(FinishReason::Stop), "{name}: {text:?}");
                assert_valid(&schema, &text);
                texts.push(text);
            }
        }
        // Sampling explores: not every draw is the greedy text.
        assert!(texts.iter().any(|t| t != &texts[0]), "{name}: {texts:?}");
        eprintln!("{name}: {}", texts.join(" | "));
    }
}

#[test]
fn generate_follows_a_regex_and_a_lark_grammar() {
    let (model, tokenizer) = load_named("qwen3");
    let factory = ConstraintFactory::new(&tokenizer, model.vocab_size() as usize).unwrap();
    let re = regex_lite_check("[a-c]{3}-[0-9]{2}");
    let grammars = [
        (factory.regex("[a-c]{3}-[0-9]{2}").unwrap(), re),
        (
            factory
                .lark("start: \"(\" num (\",\" num)? \")\"\nnum: /[0-9]{1,2}/")
                .unwrap(),
            regex_lite_check(r"\([0-9]{1,2}(,[0-9]{1,2})?\)"),
        ),
    ];
    for (constraint, check) in grammars {
        for seed in 0..4 {
            let options = GenerateOptions {
                max_tokens: 50,
                sampler: SamplerOptions {
                    temperature: 1.0,
                    ..Default::default()
                },
                seed: Some(seed),
                constraint: Some(constraint.clone()),
                stop_tokens: tokenizer.eos_token_ids(),
                ..Default::default()
            };
            let text = generate(&model, &tokenizer, &prompt(&tokenizer, "id:"), &options).unwrap();
            assert!(check(&text), "{text:?}");
        }
    }
}

/// A whole-string matcher for the few patterns above (the `regex` crate is not a
/// dependency of the tests).
fn regex_lite_check(pattern: &'static str) -> Box<dyn Fn(&str) -> bool> {
    match pattern {
        "[a-c]{3}-[0-9]{2}" => Box::new(|s: &str| {
            let b = s.as_bytes();
            b.len() == 6
                && b[..3].iter().all(|c| (b'a'..=b'c').contains(c))
                && b[3] == b'-'
                && b[4..].iter().all(u8::is_ascii_digit)
        }),
        _ => Box::new(|s: &str| {
            let Some(inner) = s.strip_prefix('(').and_then(|s| s.strip_suffix(')')) else {
                return false;
            };
            let parts: Vec<&str> = inner.split(',').collect();
            parts.len() <= 2
                && parts
                    .iter()
                    .all(|p| (1..=2).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_digit()))
        }),
    }
}

#[test]
fn engine_mixes_constrained_and_free_rows_in_one_trace() {
    let (model, tokenizer) = load_named("qwen3");
    let factory = ConstraintFactory::new(&tokenizer, model.vocab_size() as usize).unwrap();
    let schema = person_schema();
    let constraint = factory.json_schema(&schema, true).unwrap();
    let options = EngineOptions {
        max_batch: 4,
        capacity: 256,
        prefill_step_size: 16,
        ..Default::default()
    };
    let prompts = [
        "a person:",
        "someone else, please",
        "x",
        "tell me about a pet owner",
    ];
    let request = |i: usize, constrained: bool| RequestOptions {
        max_tokens: if constrained { 200 } else { 24 },
        sampler: if i % 2 == 0 {
            SamplerOptions::default()
        } else {
            SamplerOptions {
                temperature: 0.9,
                ..Default::default()
            }
        },
        seed: Some(i as u64),
        stop_tokens: tokenizer.eos_token_ids(),
        constraint: constrained.then(|| constraint.clone()),
        ..Default::default()
    };
    let run = |constrained: &dyn Fn(usize) -> bool| {
        let mut engine = Engine::new(&model, options).unwrap();
        let mut ids = HashMap::new();
        // More requests than slots, arriving at different steps.
        let order = [0usize, 1, 2, 3, 0, 1];
        let mut tokens: Vec<Vec<u32>> = vec![Vec::new(); order.len()];
        let mut finish = vec![None; order.len()];
        let mut step = 0;
        while step < order.len() || !engine.is_idle() {
            if let Some(&p) = order.get(step) {
                let id = engine
                    .insert(
                        &prompt(&tokenizer, prompts[p]),
                        request(step, constrained(step)),
                    )
                    .unwrap();
                ids.insert(id, step);
            }
            for e in engine.step().unwrap() {
                tokens[ids[&e.id]].push(e.token);
                finish[ids[&e.id]] = e.finish_reason;
            }
            step += 1;
        }
        (tokens, finish, engine.decode_traces())
    };
    let (free, _, free_traces) = run(&|_| false);
    let (mixed, finish, traces) = run(&|i| i % 2 == 0);
    // Each batch size the engine ran at traced its step once, constrained rows or not: the
    // grammar's mask is an input of the one trace, never another. (A batch of greedy rows
    // alone may also run the lean step, listed apart: the free run has more of those.)
    let sizes = |t: &[(usize, u64)]| t.iter().map(|p| p.0).collect::<BTreeSet<_>>();
    assert_eq!(sizes(&traces), sizes(&free_traces));
    assert!(
        traces.iter().chain(&free_traces).all(|&(_, t)| t == 1),
        "{traces:?} {free_traces:?}"
    );
    for (i, (m, f)) in mixed.iter().zip(&free).enumerate() {
        if i % 2 == 0 {
            let text = tokenizer.decode(m, false).unwrap();
            assert_eq!(finish[i], Some(FinishReason::Stop), "{text:?}");
            assert_valid(&schema, &text);
            assert_ne!(m, f, "request {i}: the grammar changed nothing");
        } else {
            // A zero mask adds exact zeros: the free rows are bit-for-bit unchanged.
            assert_eq!(m, f, "request {i}");
        }
    }
}

#[test]
fn bad_grammars_are_clear_errors() {
    let (model, tokenizer) = load_named("qwen3");
    let factory = ConstraintFactory::new(&tokenizer, model.vocab_size() as usize).unwrap();
    let message = |r: mlx::lm::Result<mlx::lm::structured::Constraint>| r.unwrap_err().to_string();
    let e = message(factory.json_schema(&json!({"type": "frobnicate"}), true));
    assert!(
        e.contains("invalid JSON schema") && e.contains("frobnicate"),
        "{e}"
    );
    let e = message(factory.json_schema(&json!({"$ref": "#/$defs/missing"}), true));
    assert!(e.contains("invalid JSON schema"), "{e}");
    let e = message(factory.json_schema(&json!([1, 2]), true));
    assert!(e.contains("object or a boolean"), "{e}");
    let e = message(factory.lark("start: foo"));
    assert!(e.contains("invalid Lark grammar"), "{e}");
    let e = message(factory.regex("(unclosed"));
    assert!(e.contains("invalid regex"), "{e}");
    // An unsupported keyword is an error under strict and ignored otherwise.
    let odd = json!({"type": "array", "items": {"type": "integer"}, "uniqueItems": true});
    let e = message(factory.json_schema(&odd, true));
    assert!(e.contains("uniqueItems"), "{e}");
    assert!(factory.json_schema(&odd, false).is_ok());

    // A constraint for another vocabulary is refused before anything runs.
    let other = ConstraintFactory::new(&tokenizer, model.vocab_size() as usize + 8).unwrap();
    let options = GenerateOptions {
        constraint: Some(other.json_object().unwrap()),
        ..Default::default()
    };
    let e = generate(&model, &tokenizer, &[1, 2], &options)
        .unwrap_err()
        .to_string();
    assert!(e.contains("constraint masks"), "{e}");
    let mut engine = Engine::new(&model, EngineOptions::default()).unwrap();
    let e = engine
        .insert(
            &[1, 2],
            RequestOptions {
                constraint: Some(other.json_object().unwrap()),
                ..Default::default()
            },
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("constraint masks"), "{e}");
    assert!(engine.is_idle());
}

#[test]
fn openai_response_formats() {
    let (model, tokenizer) = load_named("qwen3");
    let factory = ConstraintFactory::new(&tokenizer, model.vocab_size() as usize).unwrap();
    let text = ResponseFormat::from_openai(&json!({"type": "text"})).unwrap();
    assert!(factory.response_format(&text).unwrap().is_none());
    let object = ResponseFormat::from_openai(&json!({"type": "json_object"})).unwrap();
    assert_eq!(object, ResponseFormat::JsonObject);
    assert!(factory.response_format(&object).unwrap().is_some());
    let schema = ResponseFormat::from_openai(&json!({
        "type": "json_schema",
        "json_schema": {"name": "p", "schema": person_schema(), "strict": true},
    }))
    .unwrap();
    let constraint = factory.response_format(&schema).unwrap().unwrap();
    let options = GenerateOptions {
        max_tokens: 200,
        constraint: Some(constraint),
        stop_tokens: tokenizer.eos_token_ids(),
        ..Default::default()
    };
    let out = generate(&model, &tokenizer, &prompt(&tokenizer, "p"), &options).unwrap();
    assert_valid(&person_schema(), &out);
    for (bad, needle) in [
        (json!("json"), "expected an object"),
        (json!({"type": "yaml"}), "unknown type \"yaml\""),
        (json!({}), "missing type"),
        (json!({"type": "json_schema"}), "needs a json_schema object"),
        (
            json!({"type": "json_schema", "json_schema": {"schema": 3}}),
            "must be an object",
        ),
        (
            json!({"type": "json_schema", "json_schema": {"strict": "yes"}}),
            "strict must be a boolean",
        ),
    ] {
        let e = ResponseFormat::from_openai(&bad).unwrap_err().to_string();
        assert!(e.contains(needle), "{bad}: {e}");
    }
}

/// A server shares the factory between threads and moves requests, grammars included, to
/// the thread that runs the engine.
#[test]
fn constraints_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<ConstraintFactory>();
    send::<mlx::lm::structured::Constraint>();
    send::<RequestOptions>();

    let (model, tokenizer) = load_named("qwen3");
    let factory = ConstraintFactory::new(&tokenizer, model.vocab_size() as usize).unwrap();
    let c = factory.regex("[ab]{2}").unwrap();
    // A clone is a template's copy: equal until one of them moves on.
    let mut d = c.clone();
    assert_eq!(c, d);
    assert_ne!(c, factory.regex("[ab]{2}").unwrap(), "another compile");
    let allowed = d.allowed_tokens().unwrap();
    let a = tokenizer.token_to_id("a").unwrap();
    assert!(allowed[a as usize]);
    assert!(!allowed[tokenizer.token_to_id("c").unwrap() as usize]);
    d.commit(a).unwrap();
    assert_ne!(c, d);
    assert!(!d.is_finished() && !d.is_accepting());
    assert!(d.commit(tokenizer.token_to_id("c").unwrap()).is_err());
    let std::thread::Result::Ok(()) = std::thread::spawn(move || {
        let mut e = c;
        e.commit(a).unwrap();
        e.commit(a).unwrap();
        assert!(e.is_accepting());
    })
    .join() else {
        panic!("the thread failed")
    };
}
