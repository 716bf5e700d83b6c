//! The few libyang calls the yang3 crate does not wrap: parsing a module from
//! text with imports served by a callback, single-value type checks, and XPath
//! evaluation of compiled must/when expressions. Every `unsafe` block of the
//! crate is here; callers see safe functions on [`Ctx`].

#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;

use yang3::context::Context;
use yang3::data::{Data, DataNodeRef, DataTree};
use yang3::ffi;
use yang3::schema::SchemaNode;
use yang3::utils::Binding;

/// Serves module and submodule texts to libyang while modules are parsed.
pub(crate) trait Importer {
    /// The YANG text of module `name` (submodule `sub` of it when given), at
    /// `revision` when given.
    fn import(&mut self, name: &str, revision: Option<&str>, sub: Option<(&str, Option<&str>)>) -> Option<String>;
}

/// A libyang context owned by the schema; used under the schema's lock.
pub(crate) struct Ctx {
    pub(crate) ctx: Context,
    raw: *mut ffi::ly_ctx,
}

// The context is only used behind the schema's mutex (libyang's context is not
// safe for concurrent use with error recording), or read-only.
unsafe impl Send for Ctx {}
unsafe impl Sync for Ctx {}

/// One error libyang recorded: its message, the line in the text being parsed
/// (0 when none) and the schema or data path it names.
#[derive(Clone, Debug)]
pub(crate) struct LyError {
    pub msg: String,
    pub line: u64,
    pub path: Option<String>,
}

fn opt_str(p: *const c_char) -> Option<String> {
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

struct ImportState<'a> {
    importer: &'a mut dyn Importer,
}

unsafe extern "C" fn import_cb(
    mod_name: *const c_char,
    mod_rev: *const c_char,
    submod_name: *const c_char,
    submod_rev: *const c_char,
    user_data: *mut c_void,
    format: *mut ffi::LYS_INFORMAT::Type,
    module_data: *mut *const c_char,
    free_module_data: *mut ffi::ly_module_imp_data_free_clb,
) -> ffi::LY_ERR::Type {
    let state = unsafe { &*(user_data as *const RefCell<ImportState<'_>>) };
    let Ok(mut state) = state.try_borrow_mut() else { return ffi::LY_ERR::LY_ENOTFOUND };
    let name = opt_str(mod_name).unwrap_or_default();
    let rev = opt_str(mod_rev);
    let sub = opt_str(submod_name);
    let sub_rev = opt_str(submod_rev);
    let text = state.importer.import(&name, rev.as_deref(), sub.as_deref().map(|s| (s, sub_rev.as_deref())));
    let Some(text) = text.and_then(|t| CString::new(t).ok()) else { return ffi::LY_ERR::LY_ENOTFOUND };
    unsafe {
        *format = ffi::LYS_INFORMAT::LYS_IN_YANG;
        *module_data = text.into_raw();
        *free_module_data = Some(free_cb);
    }
    ffi::LY_ERR::LY_SUCCESS
}

unsafe extern "C" fn free_cb(data: *mut c_void, _user: *mut c_void) {
    if !data.is_null() {
        drop(unsafe { CString::from_raw(data as *mut c_char) });
    }
}

/// What a value check found.
pub(crate) enum Checked {
    /// The value fits; its canonical text and the built-in type it was
    /// resolved to (for unions and leafrefs, the member type).
    Ok { canonical: String, base: u32 },
    /// The value does not fit; libyang's reason.
    Invalid(String),
}

impl Ctx {
    /// A context that never reads files by itself: every module comes
    /// through [`Ctx::parse_module`]'s importer.
    pub fn new() -> Result<Ctx, String> {
        let flags = ffi::LY_CTX_NO_YANGLIBRARY | ffi::LY_CTX_DISABLE_SEARCHDIRS | ffi::LY_CTX_DISABLE_SEARCHDIR_CWD;
        let mut raw = ptr::null_mut();
        let ret = unsafe { ffi::ly_ctx_new(ptr::null(), flags as u16, &mut raw) };
        if ret != ffi::LY_ERR::LY_SUCCESS || raw.is_null() {
            return Err("libyang could not create a context".into());
        }
        let ctx = unsafe { Context::from_raw(&(), raw) };
        unsafe { ffi::ly_log_options(ffi::LY_LOSTORE) };
        Ok(Ctx { ctx, raw })
    }

    /// Parses `text` as an implemented module with all its features enabled;
    /// its imports and includes come from `importer`. Returns the module's
    /// name, or every error libyang recorded.
    pub fn parse_module(&self, text: &str, importer: &mut dyn Importer) -> Result<String, Vec<LyError>> {
        let c = CString::new(text)
            .map_err(|_| vec![LyError { msg: "the module text contains a NUL byte".into(), line: 0, path: None }])?;
        let state = RefCell::new(ImportState { importer });
        unsafe { ffi::ly_err_clean(self.raw, ptr::null_mut()) };
        let star = CString::new("*").expect("no NUL");
        let mut features = [star.as_ptr(), ptr::null()];
        let mut module: *mut ffi::lys_module = ptr::null_mut();
        let ret = unsafe {
            ffi::ly_ctx_set_module_imp_clb(
                self.raw,
                Some(import_cb),
                &state as *const RefCell<ImportState<'_>> as *mut c_void,
            );
            let mut input: *mut ffi::ly_in = ptr::null_mut();
            let mut ret = ffi::ly_in_new_memory(c.as_ptr(), &mut input);
            if ret == ffi::LY_ERR::LY_SUCCESS {
                ret =
                    ffi::lys_parse(self.raw, input, ffi::LYS_INFORMAT::LYS_IN_YANG, features.as_mut_ptr(), &mut module);
                ffi::ly_in_free(input, 0);
            }
            ffi::ly_ctx_set_module_imp_clb(self.raw, None, ptr::null_mut());
            ret
        };
        if ret != ffi::LY_ERR::LY_SUCCESS || module.is_null() {
            let mut errs = self.errors();
            if errs.is_empty() {
                errs.push(LyError { msg: format!("libyang error {ret}"), line: 0, path: None });
            }
            return Err(errs);
        }
        // Warnings recorded while parsing are not kept.
        unsafe { ffi::ly_err_clean(self.raw, ptr::null_mut()) };
        Ok(opt_str(unsafe { (*module).name }).unwrap_or_default())
    }

    /// The errors recorded since the last clean, oldest first; cleans them.
    fn errors(&self) -> Vec<LyError> {
        let mut out = Vec::new();
        unsafe {
            let mut e = ffi::ly_err_first(self.raw);
            while !e.is_null() {
                out.push(LyError {
                    msg: opt_str((*e).msg).unwrap_or_default(),
                    line: (*e).line,
                    path: opt_str((*e).data_path).or_else(|| opt_str((*e).schema_path)),
                });
                e = (*e).next;
            }
            ffi::ly_err_clean(self.raw, ptr::null_mut());
        }
        out
    }

    /// Checks `value` (JSON-format text) against the type of the leaf or
    /// leaf-list `node`. Leafref targets and instance-identifier targets are
    /// not looked up (the caller does that on its own data).
    pub fn check_value(&self, node: &SchemaNode<'_>, value: &str) -> Checked {
        let mut realtype: *const ffi::lysc_type = ptr::null();
        let mut canonical: *const c_char = ptr::null();
        let ret = unsafe {
            ffi::lyd_value_validate(
                self.raw,
                node.as_raw(),
                value.as_ptr() as *const c_char,
                value.len(),
                ptr::null(),
                &mut realtype,
                &mut canonical,
            )
        };
        match ret {
            ffi::LY_ERR::LY_SUCCESS | ffi::LY_ERR::LY_EINCOMPLETE => {
                let base = if realtype.is_null() { 0 } else { unsafe { (*realtype).basetype } };
                let text = opt_str(canonical);
                if !canonical.is_null() {
                    // A reference into the context's dictionary: give it back.
                    unsafe { ffi::lydict_remove(self.raw, canonical) };
                }
                let canonical = text.unwrap_or_else(|| value.to_string());
                unsafe { ffi::ly_err_clean(self.raw, ptr::null_mut()) };
                Checked::Ok { canonical, base }
            }
            _ => {
                let errs = self.errors();
                Checked::Invalid(errs.last().map_or_else(|| "invalid value".to_string(), |e| e.msg.clone()))
            }
        }
    }

    /// The must expressions of `node` (text, and error-message if any).
    pub fn musts(node: &SchemaNode<'_>) -> Vec<Expr> {
        let mut out = Vec::new();
        unsafe {
            let musts = ffi::lysc_node_musts(node.as_raw());
            for i in 0..sized_len(musts as *const c_void) {
                let m = musts.add(i);
                out.push(Expr {
                    text: opt_str(ffi::lyxp_get_expr((*m).cond)).unwrap_or_default(),
                    message: opt_str((*m).emsg),
                    prefixes: (*m).prefixes as usize,
                    module: (*node.as_raw()).module as usize,
                    context: None,
                    cond: (*m).cond as usize,
                    at: node.as_raw() as usize,
                });
            }
        }
        out
    }

    /// The when conditions of `node` (including those inherited from uses
    /// and augment), each with the schema node it is evaluated at.
    pub fn whens(node: &SchemaNode<'_>) -> Vec<Expr> {
        let mut out = Vec::new();
        unsafe {
            let whens = ffi::lysc_node_when(node.as_raw());
            for i in 0..sized_len(whens as *const c_void) {
                let w = *whens.add(i);
                out.push(Expr {
                    text: opt_str(ffi::lyxp_get_expr((*w).cond)).unwrap_or_default(),
                    message: None,
                    prefixes: (*w).prefixes as usize,
                    module: (*node.as_raw()).module as usize,
                    context: Some((*w).context as usize),
                    cond: (*w).cond as usize,
                    at: (*w).context as usize,
                });
            }
        }
        out
    }

    /// The schema nodes (addresses) an expression may read, as libyang's
    /// XPath atomizer finds them: every node a step of the expression can
    /// reach, including those passed through by `..` and the targets of
    /// `deref()`. `None` when libyang cannot tell.
    pub fn expr_atoms(&self, expr: &Expr) -> Option<Vec<usize>> {
        if expr.cond == 0 {
            return None;
        }
        // libyang wants a prefix array even when the expression has none: an
        // empty sized array is its count (0) followed by no items.
        static NO_PREFIXES: [u64; 2] = [0, 0];
        let prefixes = match expr.prefixes {
            0 => NO_PREFIXES[1..].as_ptr() as *const ffi::lysc_prefix,
            p => p as *const ffi::lysc_prefix,
        };
        let mut set: *mut ffi::ly_set = ptr::null_mut();
        let ret = unsafe {
            ffi::lys_find_expr_atoms(
                expr.at as *const ffi::lysc_node,
                expr.module as *const ffi::lys_module,
                expr.cond as *const ffi::lyxp_expr,
                prefixes,
                0,
                &mut set,
            )
        };
        if ret != ffi::LY_ERR::LY_SUCCESS || set.is_null() {
            unsafe { ffi::ly_err_clean(self.raw, ptr::null_mut()) };
            if !set.is_null() {
                unsafe { ffi::ly_set_free(set, None) };
            }
            return None;
        }
        let mut out = Vec::new();
        unsafe {
            let nodes = (*set).__bindgen_anon_1.snodes;
            for i in 0..(*set).count as usize {
                let n = *nodes.add(i);
                if !n.is_null() {
                    out.push(n as usize);
                }
            }
            ffi::ly_set_free(set, None);
        }
        Some(out)
    }

    /// The path of a leafref leaf's type, as written (prefixes of the module
    /// that defines the type).
    pub fn leafref_path(&self, node: &SchemaNode<'_>) -> Option<String> {
        unsafe {
            let l = node.as_raw() as *const ffi::lysc_node_leaf;
            let t = (*l).type_;
            if t.is_null() || (*t).basetype != ffi::LY_DATA_TYPE::LY_TYPE_LEAFREF {
                return None;
            }
            let p = (*(t as *const ffi::lysc_type_leafref)).path;
            if p.is_null() {
                return None;
            }
            opt_str(ffi::lyxp_get_expr(p))
        }
    }

    /// The schema node a leafref leaf points to.
    pub fn leafref_target<'a>(&'a self, node: &SchemaNode<'_>) -> Option<SchemaNode<'a>> {
        let t = unsafe { ffi::lysc_node_lref_target(node.as_raw()) };
        (!t.is_null()).then(|| unsafe { SchemaNode::from_raw(&self.ctx, t as *mut _) })
    }

    /// A check of the leaf's type that needs no libyang call: built-in
    /// integers without a range, strings without length or pattern.
    pub fn fast_type(&self, node: &SchemaNode<'_>) -> crate::values::Fast {
        use crate::values::Fast;
        unsafe {
            let l = node.as_raw() as *const ffi::lysc_node_leaf;
            let t = (*l).type_;
            if t.is_null() {
                return Fast::None;
            }
            let base = (*t).basetype;
            if base == ffi::LY_DATA_TYPE::LY_TYPE_STRING {
                let st = t as *const ffi::lysc_type_str;
                if (*st).length.is_null() && (*st).patterns.is_null() {
                    return Fast::String;
                }
                return Fast::None;
            }
            if crate::values::int_bounds(base).is_some() {
                let nt = t as *const ffi::lysc_type_num;
                if (*nt).range.is_null() {
                    return Fast::Int(base);
                }
            }
            Fast::None
        }
    }

    /// The built-in type whose RFC 7951 JSON kind a leaf's values take
    /// (through typedefs and leafrefs); `None` for a union, whose members
    /// may be written in different kinds.
    pub fn json_base(&self, node: &SchemaNode<'_>) -> Option<u32> {
        unsafe {
            let l = node.as_raw() as *const ffi::lysc_node_leaf;
            let mut t = (*l).type_ as *const ffi::lysc_type;
            if !t.is_null() && (*t).basetype == ffi::LY_DATA_TYPE::LY_TYPE_LEAFREF {
                t = (*(t as *const ffi::lysc_type_leafref)).realtype;
            }
            if t.is_null() || (*t).basetype == ffi::LY_DATA_TYPE::LY_TYPE_UNION {
                return None;
            }
            Some((*t).basetype)
        }
    }

    /// Whether a leaf's type is `int64` or `uint64` (after typedefs).
    pub fn is_int64(&self, node: &SchemaNode<'_>) -> bool {
        unsafe {
            let l = node.as_raw() as *const ffi::lysc_node_leaf;
            let t = (*l).type_;
            !t.is_null()
                && matches!((*t).basetype, ffi::LY_DATA_TYPE::LY_TYPE_INT64 | ffi::LY_DATA_TYPE::LY_TYPE_UINT64)
        }
    }

    /// Whether a leafref leaf requires its target to exist (`require-instance`).
    pub fn leafref_requires_instance(&self, node: &SchemaNode<'_>) -> bool {
        unsafe {
            let l = node.as_raw() as *const ffi::lysc_node_leaf;
            let t = (*l).type_;
            if t.is_null() || (*t).basetype != ffi::LY_DATA_TYPE::LY_TYPE_LEAFREF {
                return false;
            }
            (*(t as *const ffi::lysc_type_leafref)).require_instance != 0
        }
    }

    /// Whether an instance-identifier leaf requires its target to exist.
    pub fn instance_id_requires_instance(&self, node: &SchemaNode<'_>) -> bool {
        unsafe {
            let l = node.as_raw() as *const ffi::lysc_node_leaf;
            let t = (*l).type_;
            if t.is_null() || (*t).basetype != ffi::LY_DATA_TYPE::LY_TYPE_INST {
                return false;
            }
            (*(t as *const ffi::lysc_type_instanceid)).require_instance != 0
        }
    }

    /// A schema node from the pointer kept in an [`Expr`]'s context.
    pub fn node_at(&self, raw: usize) -> SchemaNode<'_> {
        unsafe { SchemaNode::from_raw(&self.ctx, raw as *mut ffi::lysc_node) }
    }

    /// The `unique` statements of a list: each a set of descendant leaves.
    pub fn uniques<'a>(&'a self, list: &SchemaNode<'_>) -> Vec<Vec<SchemaNode<'a>>> {
        let mut out = Vec::new();
        unsafe {
            let l = list.as_raw() as *const ffi::lysc_node_list;
            let u = (*l).uniques;
            for i in 0..sized_len(u as *const c_void) {
                let leaves = *u.add(i);
                let mut set = Vec::new();
                for j in 0..sized_len(leaves as *const c_void) {
                    let leaf = *leaves.add(j);
                    set.push(SchemaNode::from_raw(&self.ctx, leaf as *mut ffi::lysc_node));
                }
                out.push(set);
            }
        }
        out
    }

    /// The default values of a leaf-list, canonical.
    pub fn leaflist_defaults(&self, node: &SchemaNode<'_>) -> Vec<String> {
        let mut out = Vec::new();
        unsafe {
            let ll = node.as_raw() as *const ffi::lysc_node_leaflist;
            let d = (*ll).dflts;
            for i in 0..sized_len(d as *const c_void) {
                let v = *d.add(i);
                if let Some(s) = opt_str(ffi::lyd_value_get_canonical(self.raw, v)) {
                    out.push(s);
                }
            }
        }
        out
    }

    /// The default of a leaf, canonical.
    pub fn leaf_default(&self, node: &SchemaNode<'_>) -> Option<String> {
        unsafe {
            let l = node.as_raw() as *const ffi::lysc_node_leaf;
            let v = (*l).dflt;
            if v.is_null() {
                return None;
            }
            opt_str(ffi::lyd_value_get_canonical(self.raw, v))
        }
    }

    /// Parses RFC 7951 JSON data without validating it (a partial tree),
    /// then adds the default leaves and non-presence containers the data
    /// implies (expressions see defaults as values).
    pub fn parse_data(&self, json: &str) -> Result<DataTree<'_>, String> {
        let flags = yang3::data::DataParserFlags::NO_VALIDATION | yang3::data::DataParserFlags::STRICT;
        let r = DataTree::parse_string(
            &self.ctx,
            json,
            yang3::data::DataFormat::JSON,
            flags,
            yang3::data::DataValidationFlags::empty(),
        );
        let mut tree = r.map_err(|e| e.msg.unwrap_or_else(|| "libyang could not read the data".into()))?;
        tree.add_implicit(yang3::data::DataImplicitFlags::empty())
            .map_err(|e| e.msg.unwrap_or_else(|| "libyang could not add default nodes".into()))?;
        Ok(tree)
    }

    /// Evaluates `expr` as a boolean with `node` as the context node.
    pub fn eval(&self, tree: &DataTree<'_>, node: Option<&DataNodeRef<'_>>, expr: &Expr) -> Result<bool, String> {
        let c = CString::new(expr.text.as_str()).map_err(|_| "NUL in expression".to_string())?;
        let mut b: ffi::ly_bool = 0;
        let ret = unsafe {
            ffi::lyd_eval_xpath4(
                node.map_or(ptr::null(), |n| n.as_raw() as *const _),
                tree.raw(),
                expr.module as *const ffi::lys_module,
                c.as_ptr(),
                ffi::LY_VALUE_FORMAT::LY_VALUE_SCHEMA_RESOLVED,
                expr.prefixes as *mut c_void,
                ptr::null(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                &mut b,
            )
        };
        if ret != ffi::LY_ERR::LY_SUCCESS {
            let errs = self.errors();
            return Err(errs.last().map_or_else(|| format!("libyang error {ret}"), |e| e.msg.clone()));
        }
        Ok(b != 0)
    }
}

/// A compiled must or when expression. The pointers stay valid as long as
/// the context that compiled them (the schema owns both).
#[derive(Clone, Debug)]
pub(crate) struct Expr {
    pub text: String,
    pub message: Option<String>,
    prefixes: usize,
    module: usize,
    /// When only: the schema node the condition is evaluated at (0: the root).
    pub context: Option<usize>,
    /// The compiled expression.
    cond: usize,
    /// The schema node the expression is evaluated at (0: the root).
    at: usize,
}

/// The length of a libyang sized array (stored just before its first item).
unsafe fn sized_len(array: *const c_void) -> usize {
    if array.is_null() {
        return 0;
    }
    unsafe { *(array as *const u64).sub(1) as usize }
}

/// The encodings of data libyang reads and writes for canopy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Xml,
}

impl Format {
    fn ly(self) -> ffi::LYD_FORMAT::Type {
        match self {
            Format::Json => ffi::LYD_FORMAT::LYD_JSON,
            Format::Xml => ffi::LYD_FORMAT::LYD_XML,
        }
    }
}

/// Frees a libyang data tree on every way out.
struct Owned(*mut ffi::lyd_node);

impl Drop for Owned {
    fn drop(&mut self) {
        if !self.0.is_null() {
            unsafe { ffi::lyd_free_all(self.0) };
        }
    }
}

/// The children of an inner node, in order (none for a null pointer).
unsafe fn children(node: *mut ffi::lyd_node) -> Vec<*mut ffi::lyd_node> {
    let mut out = Vec::new();
    if node.is_null() {
        return out;
    }
    let mut c = unsafe { (*(node as *mut ffi::lyd_node_inner)).child };
    while !c.is_null() {
        out.push(c);
        c = unsafe { (*c).next };
    }
    out
}

impl Ctx {
    /// Reads `text` (data in `from`) as the children of the node at
    /// `parent` (a libyang data path; `None`: the top level), without
    /// validation but refusing what the schema does not know, and prints
    /// each node it held in `to` (at the top level, all of them as one
    /// document). Printed nodes carry their module (JSON) or namespace (XML).
    pub fn convert(
        &self,
        parent: Option<&str>,
        text: &str,
        from: Format,
        to: Format,
    ) -> Result<Vec<String>, Vec<LyError>> {
        let one = |msg: String| vec![LyError { msg, line: 0, path: None }];
        let c = CString::new(text).map_err(|_| one("the data contains a NUL byte".into()))?;
        unsafe { ffi::ly_err_clean(self.raw, ptr::null_mut()) };
        let mut top: *mut ffi::lyd_node = ptr::null_mut();
        let mut at: *mut ffi::lyd_node = ptr::null_mut();
        let mut _guard_top = Owned(ptr::null_mut());
        if let Some(p) = parent {
            let cp = CString::new(p).map_err(|_| one("the path contains a NUL byte".into()))?;
            let ret = unsafe {
                ffi::lyd_new_path2(ptr::null_mut(), self.raw, cp.as_ptr(), ptr::null(), 0, 0, 0, &mut top, &mut at)
            };
            _guard_top = Owned(top);
            if ret != ffi::LY_ERR::LY_SUCCESS || at.is_null() {
                return Err(self.errors_or(ret));
            }
        }
        let before = unsafe { children(at) };
        let mut parsed: *mut ffi::lyd_node = ptr::null_mut();
        let ret = unsafe {
            let mut input: *mut ffi::ly_in = ptr::null_mut();
            let mut ret = ffi::ly_in_new_memory(c.as_ptr(), &mut input);
            if ret == ffi::LY_ERR::LY_SUCCESS {
                let tree = if at.is_null() { &mut parsed as *mut _ } else { ptr::null_mut() };
                ret = ffi::lyd_parse_data(
                    self.raw,
                    at,
                    input,
                    from.ly(),
                    ffi::LYD_PARSE_ONLY | ffi::LYD_PARSE_STRICT,
                    0,
                    tree,
                );
                ffi::ly_in_free(input, 0);
            }
            ret
        };
        let _guard_parsed = Owned(parsed);
        if ret != ffi::LY_ERR::LY_SUCCESS {
            return Err(self.errors_or(ret));
        }
        let (nodes, flags) = if at.is_null() {
            (if parsed.is_null() { vec![] } else { vec![parsed] }, ffi::LYD_PRINT_WITHSIBLINGS)
        } else {
            let after = unsafe { children(at) };
            (after.into_iter().filter(|n| !before.contains(n)).collect(), 0)
        };
        let mut out = Vec::new();
        for n in nodes {
            let mut s: *mut c_char = ptr::null_mut();
            let ret = unsafe { ffi::lyd_print_mem(&mut s, n, to.ly(), flags | ffi::LYD_PRINT_SHRINK) };
            if ret != ffi::LY_ERR::LY_SUCCESS {
                if !s.is_null() {
                    unsafe { ffi::free(s as *mut c_void) };
                }
                return Err(self.errors_or(ret));
            }
            out.push(opt_str(s).unwrap_or_default());
            if !s.is_null() {
                unsafe { ffi::free(s as *mut c_void) };
            }
        }
        Ok(out)
    }

    /// The errors recorded, or one naming the return code when there are none.
    fn errors_or(&self, ret: ffi::LY_ERR::Type) -> Vec<LyError> {
        let mut errs = self.errors();
        if errs.is_empty() {
            errs.push(LyError { msg: format!("libyang error {ret}"), line: 0, path: None });
        }
        errs
    }
}
