#!/usr/bin/python3
"""Independent cross-check of multi2's model files with numpy only (Debian /usr/bin/python3).

Reads the files with its own minimal GGUF and safetensors parsers (written from the specs, not
from multi2's C code) and checks, for a model written both ways:
  * every GGUF tensor equals the HF tensor, with llama q/k rows permuted exactly as llama.cpp's
    convert_hf_to_gguf.py does (reshape(n_head, 2, hd/2, in).swapaxes(1, 2); n_head_kv for k),
    Qwen2 unpermuted; ne = reversed shape; tied models without output.weight;
  * the Llama-3.1 rope_freqs.weight equals llama.cpp's converter formula;
  * with --peft/--lora/--merged: a PEFT folder and a llama.cpp LoRA GGUF hold the same factors
    (lora_b of q/k permuted for llama), shapes as PEFT and llama.cpp expect, and the merged GGUF
    equals W + alpha/r * B @ A computed here.
usage: check_formats.py HF_DIR MODEL.gguf [--peft DIR --lora FILE.gguf --merged MERGED.gguf]
"""
import json, math, struct, sys
import numpy as np

GGML = {0: (np.float32, 1, 4), 1: (np.float16, 1, 2)}  # type -> (numpy dtype, block, bytes)

def read_gguf(path):
    b = open(path, 'rb').read()
    assert b[:4] == b'GGUF', 'magic'
    ver, nt, nkv = struct.unpack_from('<IQQ', b, 4)
    assert ver == 3, ver
    pos = 24
    def rd(fmt):
        nonlocal pos
        v = struct.unpack_from('<' + fmt, b, pos)
        pos += struct.calcsize('<' + fmt)
        return v[0]
    def rstr():
        nonlocal pos
        n = rd('Q'); s = b[pos:pos + n].decode('utf-8'); pos += n
        return s
    scal = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q', 12: 'd'}
    def rval(t):
        if t == 8: return rstr()
        if t == 9:
            et = rd('I'); n = rd('Q')
            return [rval(et) for _ in range(n)]
        return rd(scal[t])
    kv = {}
    for _ in range(nkv):
        k = rstr(); t = rd('I'); kv[k] = rval(t)
    infos = []
    for _ in range(nt):
        name = rstr(); nd = rd('I'); ne = [rd('Q') for _ in range(nd)]; t = rd('I'); off = rd('Q')
        infos.append((name, ne, t, off))
    align = kv.get('general.alignment', 32)
    start = (pos + align - 1) // align * align
    tensors = {}
    for name, ne, t, off in infos:
        assert off % align == 0, name
        dt, _, sz = GGML[t]
        n = int(np.prod(ne))
        a = np.frombuffer(b, dtype=dt, count=n, offset=start + off)
        tensors[name] = a.reshape(list(reversed(ne))).astype(np.float32)
    return kv, tensors

def read_st(path):
    b = open(path, 'rb').read()
    n = struct.unpack_from('<Q', b, 0)[0]
    h = json.loads(b[8:8 + n])
    meta = h.pop('__metadata__', {})
    out = {}
    dts = {'F32': np.float32, 'F16': np.float16}
    for k, v in h.items():
        s, e = v['data_offsets']
        a = np.frombuffer(b[8 + n + s:8 + n + e], dtype=dts[v['dtype']]).reshape(v['shape'])
        out[k] = a.astype(np.float32)
    return meta, out

def permute(w, n_head, n_head_kv):     # llama.cpp convert_hf_to_gguf.py LlamaModel.permute
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

LAYER = {'input_layernorm.weight': 'attn_norm.weight', 'self_attn.q_proj.weight': 'attn_q.weight',
         'self_attn.k_proj.weight': 'attn_k.weight', 'self_attn.v_proj.weight': 'attn_v.weight',
         'self_attn.o_proj.weight': 'attn_output.weight', 'self_attn.q_proj.bias': 'attn_q.bias',
         'self_attn.k_proj.bias': 'attn_k.bias', 'self_attn.v_proj.bias': 'attn_v.bias',
         'post_attention_layernorm.weight': 'ffn_norm.weight', 'mlp.gate_proj.weight': 'ffn_gate.weight',
         'mlp.up_proj.weight': 'ffn_up.weight', 'mlp.down_proj.weight': 'ffn_down.weight'}
GLOBAL = {'model.embed_tokens.weight': 'token_embd.weight', 'model.norm.weight': 'output_norm.weight',
          'lm_head.weight': 'output.weight'}

def gguf_name(hf):
    if hf in GLOBAL: return GLOBAL[hf]
    p = hf.split('.')
    assert p[0] == 'model' and p[1] == 'layers', hf
    return 'blk.%s.%s' % (p[2], LAYER['.'.join(p[3:])])

def to_gguf_layout(name, w, cfg, llama):
    if llama and ('.attn_q.' in name or '.attn_k.' in name):
        kv = cfg['num_key_value_heads'] if '.attn_k.' in name else None
        return permute(w, cfg['num_attention_heads'], kv)
    return w

def main():
    hf_dir, gguf = sys.argv[1], sys.argv[2]
    opt = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    cfg = json.load(open(hf_dir + '/config.json'))
    llama = cfg['model_type'] != 'qwen2'
    _, hf = read_st(hf_dir + '/model.safetensors')
    kv, gg = read_gguf(gguf)
    assert kv['general.architecture'] == ('llama' if llama else 'qwen2')
    arch = kv['general.architecture']
    assert kv[arch + '.block_count'] == cfg['num_hidden_layers']
    assert kv[arch + '.attention.head_count_kv'] == cfg['num_key_value_heads']
    n = 0
    for k, w in hf.items():
        g = gguf_name(k)
        assert g in gg, g
        want = to_gguf_layout(g, w, cfg, llama)
        assert gg[g].shape == want.shape and np.array_equal(gg[g], want), g
        n += 1
    if cfg.get('tie_word_embeddings'):
        assert 'output.weight' not in gg and 'lm_head.weight' not in hf
    extra = set(gg) - {gguf_name(k) for k in hf}
    rs = cfg.get('rope_scaling')
    if rs:   # llama.cpp's Llama-3.1 rope factors
        assert extra == {'rope_freqs.weight'}, extra
        base, dim = cfg['rope_theta'], cfg.get('head_dim') or cfg['hidden_size'] // cfg['num_attention_heads']
        freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
        f, lo, hi, old = rs['factor'], rs['low_freq_factor'], rs['high_freq_factor'], rs['original_max_position_embeddings']
        facs = []
        for fr in freqs:
            wl = 2 * math.pi / fr
            if wl < old / hi: facs.append(1)
            elif wl > old / lo: facs.append(f)
            else:
                sm = (old / wl - lo) / (hi - lo)
                facs.append(1 / ((1 - sm) / f + sm))
        assert np.allclose(gg['rope_freqs.weight'], np.array(facs, dtype=np.float32), rtol=1e-6), 'rope_freqs'
    else:
        assert not extra, extra
    print('%s: %d tensors match the HF folder (%s)' % (gguf, n, 'q/k permuted as llama.cpp' if llama else 'qwen2, unpermuted'))
    if '--peft' in opt:
        ac = json.load(open(opt['--peft'] + '/adapter_config.json'))
        assert ac['peft_type'] == 'LORA' and ac['task_type'] == 'CAUSAL_LM' and ac['bias'] == 'none'
        r, alpha = ac['r'], ac['lora_alpha']
        _, ad = read_st(opt['--peft'] + '/adapter_model.safetensors')
        lkv, lg = read_gguf(opt['--lora'])
        assert lkv['general.type'] == 'adapter' and lkv['adapter.type'] == 'lora' and lkv['adapter.lora.alpha'] == alpha
        _, merged = read_gguf(opt['--merged'])
        mods = set()
        for k in ad:
            assert k.startswith('base_model.model.') and (k.endswith('.lora_A.weight') or k.endswith('.lora_B.weight')), k
            mods.add(k[len('base_model.model.'):-len('.lora_A.weight')])
        nm = 0
        for mod in sorted(mods):
            A, B = ad['base_model.model.%s.lora_A.weight' % mod], ad['base_model.model.%s.lora_B.weight' % mod]
            W = hf[mod + '.weight']
            assert A.shape == (r, W.shape[1]) and B.shape == (W.shape[0], r), mod
            g = gguf_name(mod + '.weight')
            assert np.array_equal(lg[g + '.lora_a'], A), g
            assert np.array_equal(lg[g + '.lora_b'], to_gguf_layout(g, B, cfg, llama)), g
            want = (W.astype(np.float64) + alpha / r * (B.astype(np.float64) @ A.astype(np.float64))).astype(np.float32)
            got = merged[g]
            err = np.abs(got - to_gguf_layout(g, want, cfg, llama)).max()
            assert err < 1e-5, (g, err)
            nm += 1
        print('%s: %d LoRA pairs match the PEFT folder; merged model = W + alpha/r B A (max err < 1e-5)' % (opt['--lora'], nm))

main()
