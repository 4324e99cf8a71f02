//! `#[derive(TreeNode)]` for mlx-tree. Use it through `mlx_tree::TreeNode` (or
//! `mlx::utils::TreeNode`); the generated code calls the same `Flattener`/`Unflattener` methods
//! a registered foreign type uses, so derived and registered nodes are one system.
//!
//! Attributes:
//! - field: `#[tree(static)]`, `#[tree(skip)]`, `#[tree(rename = "name")]`
//! - variant: `#[tree(rename = "Name")]`; in a transparent enum `#[tree(other)]`
//! - container: `#[tree(rename = "Name")]` (type name in the `TreeDef`),
//!   `#[tree(bound = "T: Trait, ...")]` (replaces the inferred where-clause),
//!   `#[tree(crate = "path::to::mlx_tree")]`, `#[tree(transparent)]`
//!
//! `#[tree(transparent)]` makes the type no node of its own: a struct of one field is that
//! field's tree, and an enum whose variants each hold one value is that value's tree (a layer
//! that is attention or a state-space mixer, under the same key either way). Reading one back,
//! the enum tells its variants apart by the struct name of the next node, which is the name of
//! the variant's type (through a `Box`); the variant marked `#[tree(other)]` takes every other
//! node (a type parameter's variant must be that one, as its name is not known here); a
//! variant holding an `Array` reads a leaf.

// Neither this crate nor the code it generates uses `unsafe`, so the derive works in crates
// that forbid it (mlx-tree's own tests do).
#![forbid(unsafe_code)]

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    parse_macro_input, parse_quote, Attribute, Data, DeriveInput, Fields, Generics, Ident, LitStr,
    Path, Type, WherePredicate,
};

#[proc_macro_derive(TreeNode, attributes(tree))]
pub fn derive_tree_node(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// `#[derive(StaticData)]`: see `mlx_tree::StaticData`. Container attribute:
/// `#[tree(crate = "path::to::mlx_tree")]`.
#[proc_macro_derive(StaticData, attributes(tree))]
pub fn derive_static_data(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    container_attrs(&input.attrs)
        .and_then(|attrs| static_data::expand(input, crate_path(attrs.krate)))
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

mod static_data;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Tree,
    Static,
    Skip,
}

struct FieldInfo {
    /// `self.<member>` access: an ident or an index.
    member: syn::Member,
    ty: Type,
    mode: Mode,
    /// The key in the TreeDef (and the path segment).
    key: String,
    span: Span,
}

#[derive(Default)]
struct ContainerAttrs {
    rename: Option<String>,
    bound: Option<Vec<WherePredicate>>,
    krate: Option<Path>,
    transparent: bool,
}

fn container_attrs(attrs: &[Attribute]) -> syn::Result<ContainerAttrs> {
    let mut out = ContainerAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("tree")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                out.rename = Some(meta.value()?.parse::<LitStr>()?.value());
            } else if meta.path.is_ident("bound") {
                let lit: LitStr = meta.value()?.parse()?;
                let preds = lit.parse_with(
                    syn::punctuated::Punctuated::<WherePredicate, syn::Token![,]>::parse_terminated,
                )?;
                out.bound = Some(preds.into_iter().collect());
            } else if meta.path.is_ident("crate") {
                out.krate = Some(meta.value()?.parse::<LitStr>()?.parse()?);
            } else if meta.path.is_ident("transparent") {
                out.transparent = true;
            } else {
                return Err(meta.error(
                    "unknown container attribute: expected `rename`, `bound`, `crate` or `transparent`",
                ));
            }
            Ok(())
        })?;
    }
    Ok(out)
}

#[derive(Default)]
struct VariantAttrs {
    rename: Option<String>,
    /// In a transparent enum: the variant that reads every node no other variant names.
    other: Option<Span>,
}

fn variant_attrs(attrs: &[Attribute]) -> syn::Result<VariantAttrs> {
    let mut out = VariantAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("tree")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                out.rename = Some(meta.value()?.parse::<LitStr>()?.value());
                Ok(())
            } else if meta.path.is_ident("other") {
                out.other = Some(meta.path.span());
                Ok(())
            } else {
                Err(meta.error("unknown variant attribute: expected `rename` or `other`"))
            }
        })?;
    }
    Ok(out)
}

fn field_infos(fields: &Fields) -> syn::Result<Vec<FieldInfo>> {
    let mut out = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let mut mode = Mode::Tree;
        let mut rename: Option<String> = None;
        for attr in field.attrs.iter().filter(|a| a.path().is_ident("tree")) {
            attr.parse_nested_meta(|meta| {
                let set = |mode: &mut Mode, new: Mode| {
                    if *mode != Mode::Tree {
                        return Err(meta.error("a field is either `static` or `skip`, not both"));
                    }
                    *mode = new;
                    Ok(())
                };
                if meta.path.is_ident("static") {
                    set(&mut mode, Mode::Static)
                } else if meta.path.is_ident("skip") {
                    set(&mut mode, Mode::Skip)
                } else if meta.path.is_ident("rename") {
                    rename = Some(meta.value()?.parse::<LitStr>()?.value());
                    Ok(())
                } else {
                    Err(meta.error(
                        "unknown field attribute: expected `static`, `skip` or `rename = \"..\"`",
                    ))
                }
            })?;
        }
        if mode == Mode::Skip && rename.is_some() {
            return Err(syn::Error::new(
                field.span(),
                "a `skip` field is not in the tree, so it cannot be renamed",
            ));
        }
        let (member, default_key) = match &field.ident {
            Some(ident) => (syn::Member::Named(ident.clone()), unraw(ident)),
            None => (syn::Member::Unnamed(syn::Index::from(i)), i.to_string()),
        };
        out.push(FieldInfo {
            member,
            ty: field.ty.clone(),
            mode,
            key: rename.unwrap_or(default_key),
            span: field.ty.span(),
        });
    }
    let mut seen = std::collections::HashSet::new();
    for f in out.iter().filter(|f| f.mode != Mode::Skip) {
        if !seen.insert(f.key.clone()) {
            return Err(syn::Error::new(
                f.span,
                format!("two fields use the key `{}`", f.key),
            ));
        }
    }
    Ok(out)
}

pub(crate) fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_string).unwrap_or(s)
}

/// Where to find mlx-tree from the crate being compiled: `mlx_tree` itself, or the `mlx`
/// facade's `utils` module for users who depend on `mlx` only.
fn crate_path(explicit: Option<Path>) -> Path {
    use proc_macro_crate::{crate_name, FoundCrate};
    if let Some(p) = explicit {
        return p;
    }
    match crate_name("mlx-tree") {
        // Inside mlx-tree, `extern crate self as mlx_tree` makes the absolute path work too.
        Ok(FoundCrate::Itself) => parse_quote!(::mlx_tree),
        Ok(FoundCrate::Name(name)) => {
            let ident = Ident::new(&name, Span::call_site());
            parse_quote!(::#ident)
        }
        Err(_) => match crate_name("mlx") {
            Ok(FoundCrate::Name(name)) => {
                let ident = Ident::new(&name, Span::call_site());
                parse_quote!(::#ident::utils)
            }
            Ok(FoundCrate::Itself) => parse_quote!(crate::utils),
            Err(_) => parse_quote!(::mlx_tree),
        },
    }
}

/// Whether a type mentions one of the generic type parameters.
fn mentions(ty: &Type, param: &Ident) -> bool {
    fn walk(ts: TokenStream2, param: &Ident) -> bool {
        ts.into_iter().any(|tt| match tt {
            TokenTree::Ident(i) => i == *param,
            TokenTree::Group(g) => walk(g.stream(), param),
            _ => false,
        })
    }
    walk(quote!(#ty), param)
}

/// The where-clause: like serde, each type parameter used by a tree field gets `TreeNode`, one
/// used by a static field gets `StaticData`, and a skipped field whose type
/// mentions a parameter needs `Default`.
fn bounds(
    generics: &Generics,
    fields: &[&FieldInfo],
    krate: &Path,
    explicit: Option<Vec<WherePredicate>>,
) -> Generics {
    let mut g = generics.clone();
    let clause = g.make_where_clause();
    if let Some(preds) = explicit {
        clause.predicates.extend(preds);
        return g;
    }
    for param in generics.type_params() {
        let ident = &param.ident;
        let used = |mode: Mode| {
            fields
                .iter()
                .any(|f| f.mode == mode && mentions(&f.ty, ident))
        };
        if used(Mode::Tree) {
            clause
                .predicates
                .push(parse_quote!(#ident: #krate::TreeNode));
        }
        if used(Mode::Static) {
            clause
                .predicates
                .push(parse_quote!(#ident: #krate::StaticData));
        }
    }
    for f in fields.iter().filter(|f| f.mode == Mode::Skip) {
        if generics.type_params().any(|p| mentions(&f.ty, &p.ident)) {
            let ty = &f.ty;
            clause
                .predicates
                .push(parse_quote!(#ty: ::core::default::Default));
        }
    }
    g
}

/// Statements emitting `fields` into the flattener `__f`; `access` names each field's value.
fn flatten_body(
    fields: &[FieldInfo],
    krate: &Path,
    access: impl Fn(&FieldInfo, usize) -> TokenStream2,
) -> TokenStream2 {
    let stmts = fields.iter().enumerate().map(|(i, f)| {
        let key = &f.key;
        let ty = &f.ty;
        let value = access(f, i);
        match f.mode {
            Mode::Tree => quote_spanned!(f.span=>
                #krate::Flattener::field::<#ty>(__f, #key, #value);
            ),
            Mode::Static => quote_spanned!(f.span=>
                #krate::Flattener::static_field::<#ty>(__f, #key, #value);
            ),
            Mode::Skip => quote!(),
        }
    });
    quote!(#(#stmts)*)
}

/// Expressions reading each field back from the unflattener `__u`, in declaration order.
fn unflatten_exprs(fields: &[FieldInfo], krate: &Path) -> Vec<TokenStream2> {
    fields
        .iter()
        .map(|f| {
            let key = &f.key;
            let ty = &f.ty;
            match f.mode {
                Mode::Tree => quote_spanned!(f.span=>
                    #krate::Unflattener::field::<#ty>(__u, #key)?
                ),
                Mode::Static => quote_spanned!(f.span=>
                    #krate::Unflattener::static_field::<#ty>(__u, #key)?
                ),
                Mode::Skip => quote_spanned!(f.span=> ::core::default::Default::default()),
            }
        })
        .collect()
}

/// `Name { a: .., b: .. }`, `Name(.., ..)` or `Name` from per-field expressions.
fn construct(
    path: TokenStream2,
    fields: &Fields,
    infos: &[FieldInfo],
    exprs: &[TokenStream2],
) -> TokenStream2 {
    match fields {
        Fields::Named(_) => {
            let names = infos.iter().map(|f| &f.member);
            quote!(#path { #(#names: #exprs),* })
        }
        Fields::Unnamed(_) => quote!(#path ( #(#exprs),* )),
        Fields::Unit => path,
    }
}

fn expand(input: DeriveInput) -> syn::Result<TokenStream2> {
    let attrs = container_attrs(&input.attrs)?;
    let krate = crate_path(attrs.krate.clone());
    let name = &input.ident;
    let type_name = attrs.rename.clone().unwrap_or_else(|| unraw(name));

    let (flatten, unflatten, leaves_mut, all_fields) = match &input.data {
        _ if attrs.transparent => {
            let (flatten, unflatten, leaves_mut, infos) = transparent(&input, &attrs, &krate)?;
            (flatten, unflatten, leaves_mut, vec![infos])
        }
        Data::Struct(data) => {
            let infos = field_infos(&data.fields)?;
            let body = flatten_body(&infos, &krate, |f, _| {
                let m = &f.member;
                quote!(&self.#m)
            });
            let exprs = unflatten_exprs(&infos, &krate);
            let build = construct(quote!(#name), &data.fields, &infos, &exprs);
            let visits = infos.iter().filter(|f| f.mode == Mode::Tree).map(|f| {
                let m = &f.member;
                quote_spanned!(f.span=> #krate::TreeNode::leaves_mut(&mut self.#m, __f)?;)
            });
            (
                quote!(__f.struct_node(#type_name, |__f| { #body });),
                quote!(__u.struct_node(#type_name, |__u| ::core::result::Result::Ok(#build))),
                quote!(#(#visits)* ::core::result::Result::Ok(())),
                vec![infos],
            )
        }
        Data::Enum(data) => {
            let mut flatten_arms = Vec::new();
            let mut unflatten_arms = Vec::new();
            let mut mut_arms = Vec::new();
            let mut variant_names = Vec::new();
            let mut all = Vec::new();
            for v in &data.variants {
                let vident = &v.ident;
                let vattrs = variant_attrs(&v.attrs)?;
                if let Some(span) = vattrs.other {
                    return Err(syn::Error::new(
                        span,
                        "`#[tree(other)]` is for the variants of a `#[tree(transparent)]` enum",
                    ));
                }
                let vname = vattrs.rename.unwrap_or_else(|| unraw(vident));
                let full = format!("{type_name}::{vname}");
                let infos = field_infos(&v.fields)?;
                let binding = |i: usize| format_ident!("__b{}", i);
                // Patterns binding every field (`_` for skipped ones).
                let pattern = |use_skip: bool| {
                    let parts = infos.iter().enumerate().map(|(i, f)| {
                        let b = if f.mode == Mode::Skip && use_skip {
                            quote!(_)
                        } else {
                            let b = binding(i);
                            quote!(#b)
                        };
                        match &f.member {
                            syn::Member::Named(m) => quote!(#m: #b),
                            syn::Member::Unnamed(_) => b,
                        }
                    });
                    match &v.fields {
                        Fields::Named(_) => quote!(#name::#vident { #(#parts),* }),
                        Fields::Unnamed(_) => quote!(#name::#vident ( #(#parts),* )),
                        Fields::Unit => quote!(#name::#vident),
                    }
                };
                let pat = pattern(true);
                let body = flatten_body(&infos, &krate, |_, i| {
                    let b = binding(i);
                    quote!(#b)
                });
                flatten_arms.push(quote!(#pat => __f.variant_node(#full, |__f| { #body }),));
                let exprs = unflatten_exprs(&infos, &krate);
                let build = construct(quote!(#name::#vident), &v.fields, &infos, &exprs);
                unflatten_arms.push(quote!(#vname => ::core::result::Result::Ok(#build),));
                let visits = infos
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.mode == Mode::Tree)
                    .map(|(i, f)| {
                        let b = binding(i);
                        quote_spanned!(f.span=> #krate::TreeNode::leaves_mut(#b, __f)?;)
                    });
                // Only tree fields are bound for the mutable walk.
                let mut_parts = infos.iter().enumerate().map(|(i, f)| {
                    let b = if f.mode == Mode::Tree {
                        let b = binding(i);
                        quote!(#b)
                    } else {
                        quote!(_)
                    };
                    match &f.member {
                        syn::Member::Named(m) => quote!(#m: #b),
                        syn::Member::Unnamed(_) => b,
                    }
                });
                let mut_pat = match &v.fields {
                    Fields::Named(_) => quote!(#name::#vident { #(#mut_parts),* }),
                    Fields::Unnamed(_) => quote!(#name::#vident ( #(#mut_parts),* )),
                    Fields::Unit => quote!(#name::#vident),
                };
                mut_arms.push(quote!(#mut_pat => { #(#visits)* }));
                variant_names.push(vname);
                all.push(infos);
            }
            let flatten = if flatten_arms.is_empty() {
                quote!(match *self {})
            } else {
                quote!(match self { #(#flatten_arms)* })
            };
            let leaves_mut = if mut_arms.is_empty() {
                quote!(match *self {})
            } else {
                quote!(match self { #(#mut_arms)* } ::core::result::Result::Ok(()))
            };
            (
                flatten,
                quote!(__u.variant_node(#type_name, |__u, __variant| match __variant {
                    #(#unflatten_arms)*
                    _ => ::core::result::Result::Err(
                        __u.unknown_variant(#type_name, &[#(#variant_names),*])
                    ),
                })),
                leaves_mut,
                all,
            )
        }
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span,
                "TreeNode cannot be derived for unions",
            ))
        }
    };

    let flat: Vec<&FieldInfo> = all_fields.iter().flatten().collect();
    let generics = bounds(&input.generics, &flat, &krate, attrs.bound);
    let (impl_g, ty_g, where_g) = generics.split_for_impl();
    Ok(quote! {
        #[automatically_derived]
        impl #impl_g #krate::TreeNode for #name #ty_g #where_g {
            #[inline]
            fn flatten<'__a>(&'__a self, __f: &mut #krate::Flattener<'__a>) {
                #flatten
            }

            fn unflatten(__u: &mut #krate::Unflattener<'_>) -> #krate::Result<Self> {
                #unflatten
            }

            #[allow(unused_variables)]
            fn leaves_mut<__F: ::core::ops::FnMut(&mut #krate::Array)>(
                &mut self,
                __f: &mut __F,
            ) -> #krate::Result<()> {
                // One level of a walk over user types: safe at any depth (see mlx_tree's stack).
                #krate::__private::grow(move || { #leaves_mut })
            }
        }
    })
}

/// The struct name a transparent enum's variant of type `ty` reads: the type's own name, through
/// a `Box`; `None` for what has no such name here (a type parameter, a tuple, ...).
fn node_name(ty: &Type, generics: &Generics) -> Option<String> {
    let Type::Path(p) = ty else { return None };
    if p.qself.is_some() {
        return None;
    }
    let last = p.path.segments.last()?;
    if last.ident == "Box" {
        if let syn::PathArguments::AngleBracketed(args) = &last.arguments {
            if let Some(syn::GenericArgument::Type(inner)) = args.args.first() {
                return node_name(inner, generics);
            }
        }
        return None;
    }
    let is_param =
        p.path.segments.len() == 1 && generics.type_params().any(|t| t.ident == last.ident);
    (!is_param).then(|| unraw(&last.ident))
}

/// The bodies of `flatten`, `unflatten` and `leaves_mut` for `#[tree(transparent)]` (see the
/// crate's documentation), and the one field of the struct or of each variant.
fn transparent(
    input: &DeriveInput,
    attrs: &ContainerAttrs,
    krate: &Path,
) -> syn::Result<(TokenStream2, TokenStream2, TokenStream2, Vec<FieldInfo>)> {
    let name = &input.ident;
    if let Some(rename) = &attrs.rename {
        return Err(syn::Error::new(
            name.span(),
            format!("a `#[tree(transparent)]` type is no node of its own: `rename = \"{rename}\"` names nothing"),
        ));
    }
    // The one value a struct or a variant holds, as its only tree field.
    let single = |fields: &Fields, span: Span| -> syn::Result<FieldInfo> {
        let mut infos = field_infos(fields)?;
        if infos.len() != 1 || infos[0].mode != Mode::Tree {
            return Err(syn::Error::new(
                span,
                "a `#[tree(transparent)]` struct or variant holds exactly one field, a tree",
            ));
        }
        Ok(infos.remove(0))
    };
    let bodies = match &input.data {
        Data::Struct(data) => {
            let f = single(&data.fields, name.span())?;
            let (m, ty) = (&f.member, &f.ty);
            let build = construct(
                quote!(#name),
                &data.fields,
                std::slice::from_ref(&f),
                &[quote!(<#ty as #krate::TreeNode>::unflatten(__u)?)],
            );
            (
                quote!(#krate::TreeNode::flatten(&self.#m, __f)),
                quote!(::core::result::Result::Ok(#build)),
                quote!(#krate::TreeNode::leaves_mut(&mut self.#m, __f)),
                vec![f],
            )
        }
        Data::Enum(data) => {
            let (mut flatten_arms, mut named_arms, mut mut_arms, mut names) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let mut other = None;
            let mut infos = Vec::new();
            for v in &data.variants {
                let vident = &v.ident;
                let vattrs = variant_attrs(&v.attrs)?;
                if vattrs.rename.is_some() {
                    return Err(syn::Error::new(
                        vident.span(),
                        "a transparent enum's variant is no node of its own: `rename` names nothing",
                    ));
                }
                if !matches!(v.fields, Fields::Unnamed(_)) {
                    return Err(syn::Error::new(
                        vident.span(),
                        "a transparent enum's variant holds one unnamed field: `Variant(Type)`",
                    ));
                }
                let f = single(&v.fields, vident.span())?;
                let ty = &f.ty;
                flatten_arms
                    .push(quote!(#name::#vident(__b) => #krate::TreeNode::flatten(__b, __f),));
                mut_arms
                    .push(quote!(#name::#vident(__b) => #krate::TreeNode::leaves_mut(__b, __f),));
                let read = quote!(<#ty as #krate::TreeNode>::unflatten(__u).map(#name::#vident));
                if let Some(span) = vattrs.other {
                    if other.is_some() {
                        return Err(syn::Error::new(
                            span,
                            "one variant at most is `#[tree(other)]`",
                        ));
                    }
                    other = Some(read);
                } else {
                    let Some(node) = node_name(ty, &input.generics) else {
                        return Err(syn::Error::new(
                            ty.span(),
                            "this variant's node has no name known here (a type parameter?): \
                             mark it `#[tree(other)]`",
                        ));
                    };
                    if names.contains(&node) {
                        return Err(syn::Error::new(
                            ty.span(),
                            format!("two variants read a `{node}` node: mark one `#[tree(other)]`"),
                        ));
                    }
                    // An array is a leaf, not a struct named `Array`.
                    let kind = if node == "Array" {
                        quote!(#krate::NodeKind::Leaf)
                    } else {
                        quote!(#krate::NodeKind::Struct(#node))
                    };
                    named_arms.push(quote!(#kind => #read,));
                    names.push(node);
                }
                infos.push(f);
            }
            if data.variants.is_empty() {
                return Err(syn::Error::new(
                    name.span(),
                    "a transparent enum has variants",
                ));
            }
            let rest = match other {
                Some(read) => quote!(_ => #read,),
                None => {
                    let expected = format!("a {name} (one of {})", names.join(", "));
                    quote!(_ => ::core::result::Result::Err(__u.mismatch(#expected)),)
                }
            };
            (
                quote!(match self { #(#flatten_arms)* }),
                quote!(match #krate::Unflattener::peek_kind(__u)? { #(#named_arms)* #rest }),
                quote!(match self { #(#mut_arms)* }),
                infos,
            )
        }
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span,
                "TreeNode cannot be derived for unions",
            ))
        }
    };
    Ok(bodies)
}
