//! `#[derive(StaticData)]`: exact equality, hashing and JSON for a struct or enum used as
//! static tree data, composed field by field from the fields' own `StaticData` impls.

use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote};
use syn::{parse_quote, Data, DeriveInput, Fields, Ident, Path};

/// Bindings `__x0, __x1, ..` for the fields, and the pattern that binds them.
fn bind(path: TokenStream2, fields: &Fields, prefix: &str) -> (TokenStream2, Vec<Ident>) {
    let names: Vec<Ident> = (0..fields.len())
        .map(|i| format_ident!("{}{}", prefix, i))
        .collect();
    let pat = match fields {
        Fields::Named(f) => {
            let members = f.named.iter().map(|f| f.ident.as_ref());
            quote!(#path { #(#members: #names),* })
        }
        Fields::Unnamed(_) => quote!(#path ( #(#names),* )),
        Fields::Unit => path,
    };
    (pat, names)
}

/// JSON of the bound fields: an object for named fields, an array for positional ones, `null`
/// for none.
fn fields_to_json(fields: &Fields, names: &[Ident], krate: &Path) -> TokenStream2 {
    match fields {
        Fields::Named(f) => {
            let keys = f
                .named
                .iter()
                .map(|f| crate::unraw(f.ident.as_ref().expect("named fields have identifiers")));
            quote!({
                let mut __m = #krate::serde_json::Map::new();
                #( __m.insert(#keys.to_string(), #krate::StaticData::to_json(#names)?); )*
                #krate::serde_json::Value::Object(__m)
            })
        }
        Fields::Unnamed(_) => quote!(#krate::serde_json::Value::Array(
            ::std::vec![#( #krate::StaticData::to_json(#names)? ),*]
        )),
        Fields::Unit => quote!(#krate::serde_json::Value::Null),
    }
}

/// An expression building `path` from the JSON `__j` written by `fields_to_json`.
fn fields_from_json(path: TokenStream2, fields: &Fields, krate: &Path) -> TokenStream2 {
    let private = quote!(#krate::__private);
    match fields {
        Fields::Named(f) => {
            let members: Vec<&Ident> = f
                .named
                .iter()
                .map(|f| f.ident.as_ref().expect("named fields have identifiers"))
                .collect();
            let keys = members.iter().map(|m| crate::unraw(m));
            let n = members.len();
            quote!({
                let __o = #private::json_object::<Self>(__j, #n)?;
                #path { #( #members: #krate::StaticData::from_json(#private::json_field::<Self>(__o, #keys)?)? ),* }
            })
        }
        Fields::Unnamed(u) => {
            let n = u.unnamed.len();
            let idx = 0..n;
            quote!({
                let __a = #private::json_array::<Self>(__j, #n)?;
                #path ( #( #krate::StaticData::from_json(&__a[#idx])? ),* )
            })
        }
        Fields::Unit => quote!({
            #private::json_null::<Self>(__j)?;
            #path
        }),
    }
}

pub(crate) fn expand(input: DeriveInput, krate: Path) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    let mut generics = input.generics.clone();
    {
        let clause = generics.make_where_clause();
        for p in input.generics.type_params() {
            let ident = &p.ident;
            clause
                .predicates
                .push(parse_quote!(#ident: #krate::StaticData));
        }
    }
    let (impl_g, ty_g, where_g) = generics.split_for_impl();
    let private = quote!(#krate::__private);

    let (eq, hash, to_json, from_json) = match &input.data {
        Data::Struct(s) => {
            let (pat_a, a) = bind(quote!(#name), &s.fields, "__a");
            let (pat_b, b) = bind(quote!(#name), &s.fields, "__b");
            let to = fields_to_json(&s.fields, &a, &krate);
            let from = fields_from_json(quote!(#name), &s.fields, &krate);
            (
                quote!({
                    let #pat_a = self;
                    let #pat_b = __other;
                    true #( && #krate::StaticData::static_eq(#a, #b) )*
                }),
                quote!({
                    let #pat_a = self;
                    #( #krate::StaticData::static_hash(#a, __state); )*
                }),
                quote!({
                    let #pat_a = self;
                    ::core::result::Result::Ok(#to)
                }),
                quote!(::core::result::Result::Ok(#from)),
            )
        }
        Data::Enum(e) => {
            let mut eq_arms = Vec::new();
            let mut hash_arms = Vec::new();
            let mut json_arms = Vec::new();
            let mut unit_arms = Vec::new();
            let mut keyed_arms = Vec::new();
            for (i, v) in e.variants.iter().enumerate() {
                let vident = &v.ident;
                let vname = crate::unraw(vident);
                let (pat_a, a) = bind(quote!(#name::#vident), &v.fields, "__a");
                let (pat_b, b) = bind(quote!(#name::#vident), &v.fields, "__b");
                let disc = i as u32;
                eq_arms.push(quote!((#pat_a, #pat_b) => true #( && #krate::StaticData::static_eq(#a, #b) )*,));
                hash_arms.push(quote!(#pat_a => {
                    ::core::hash::Hasher::write_u32(__state, #disc);
                    #( #krate::StaticData::static_hash(#a, __state); )*
                }));
                if matches!(v.fields, Fields::Unit) {
                    json_arms.push(
                        quote!(#pat_a => #krate::serde_json::Value::String(#vname.to_string()),),
                    );
                    unit_arms.push(quote!(#vname => ::core::result::Result::Ok(#name::#vident),));
                } else {
                    let to = fields_to_json(&v.fields, &a, &krate);
                    json_arms.push(quote!(#pat_a => {
                        let mut __m = #krate::serde_json::Map::new();
                        __m.insert(#vname.to_string(), #to);
                        #krate::serde_json::Value::Object(__m)
                    }));
                    let from = fields_from_json(quote!(#name::#vident), &v.fields, &krate);
                    keyed_arms.push(quote!(#vname => ::core::result::Result::Ok(#from),));
                }
            }
            let eq = if e.variants.is_empty() {
                quote!(match *self {})
            } else {
                quote!(match (self, __other) { #(#eq_arms)* _ => false })
            };
            let hash = if e.variants.is_empty() {
                quote!(match *self {})
            } else {
                quote!(match self { #(#hash_arms)* })
            };
            let to_json = if e.variants.is_empty() {
                quote!(match *self {})
            } else {
                quote!(::core::result::Result::Ok(match self { #(#json_arms)* }))
            };
            let from_json = quote!({
                match #private::json_variant::<Self>(__j)? {
                    (__name, ::core::option::Option::None) => match __name {
                        #(#unit_arms)*
                        _ => ::core::result::Result::Err(#private::json_error::<Self>(__j)),
                    },
                    (__name, ::core::option::Option::Some(__j)) => match __name {
                        #(#keyed_arms)*
                        _ => ::core::result::Result::Err(#private::json_error::<Self>(__j)),
                    },
                }
            });
            (eq, hash, to_json, from_json)
        }
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span,
                "StaticData cannot be derived for unions",
            ))
        }
    };

    Ok(quote! {
        #[automatically_derived]
        impl #impl_g #krate::StaticData for #name #ty_g #where_g {
            #[allow(unused_variables, unreachable_patterns)]
            fn static_eq(&self, __other: &Self) -> bool {
                #eq
            }

            #[allow(unused_variables)]
            fn static_hash<__H: ::core::hash::Hasher>(&self, __state: &mut __H) {
                #hash
            }

            #[allow(unused_variables)]
            fn to_json(&self) -> #krate::Result<#krate::serde_json::Value> {
                #to_json
            }

            #[allow(unused_variables, unreachable_code)]
            fn from_json(__j: &#krate::serde_json::Value) -> #krate::Result<Self> {
                #from_json
            }
        }
    })
}
