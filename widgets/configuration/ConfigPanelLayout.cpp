#include "ConfigPanelLayout.h"

#include "vocab/KeyRules.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonObject>

namespace widelab {
namespace {

QString t(const char* text) { return QCoreApplication::translate("ConfigPanel", text); }

// A field's value as the rules read it (vocab/KeyRules): undefined is null.
nlohmann::json toJson(const QJsonValue& value)
{
    switch (value.type()) {
    case QJsonValue::Bool:
        return value.toBool();
    case QJsonValue::Double:
        return value.toDouble();
    case QJsonValue::String:
        return value.toString().toStdString();
    case QJsonValue::Array: {
        nlohmann::json array = nlohmann::json::array();
        for (const QJsonValue& item : value.toArray())
            array.push_back(toJson(item));
        return array;
    }
    case QJsonValue::Object: {
        nlohmann::json object = nlohmann::json::object();
        const QJsonObject members = value.toObject();
        for (auto it = members.begin(); it != members.end(); ++it)
            object[it.key().toStdString()] = toJson(it.value());
        return object;
    }
    case QJsonValue::Null:
    case QJsonValue::Undefined:
        break;
    }
    return nullptr;
}

QList<FieldGroup> makeLayout()
{
    return {
        {t("Run"),
         {
             {"name", t("Name"), t("A short name for the run, shown in lists and plots.")},
             {"description", t("Description"), t("What this run is about: free text, kept with the run.")},
         }},
        {t("Input"),
         {
             {"model.input", t("Input"),
              t("Tokens: token ids (text, ListOps). Image: pictures cut into patches, each patch embedded as one "
                "token (ViT; WideNet's image setting); everything after the embedding is the same encoder."),
              {}, 0.1, false, {{"tokens", t("Tokens")}, {"image", t("Image (patches)")}}},
             {"model.image_size", t("Image size"),
              t("Height and width in pixels every image is resized to; a multiple of the patch size.")},
             {"model.patch_size", t("Patch size"),
              t("Height and width of a patch in pixels. (image size / patch size)^2 patches are the tokens.")},
             {"model.channels", t("Channels"), t("1: grey scale; 3: RGB.")},
         }},
        {t("Depth"),
         {
             {"model.layers", t("Blocks"),
              t("Number of Transformer blocks L. With shared modules, a deeper stack reuses the same weights "
                "more times (WideNet, ALBERT) instead of adding parameters.")},
         }},
        {t("Width"),
         {
             {"model.d_model", t("Model width (d_model)"),
              t("Width D of the residual stream: every block reads and writes vectors of this size.")},
             {"model.heads", t("Attention heads"),
              t("Attention heads H per block. Wide Attention trades blocks for heads at a fixed total (6x8 ... 1x48).")},
             {"model.head_dim", t("Head dimension"),
              t("Per-head width A; the attention width is heads x head_dim, independent of d_model.")},
             {"model.ffn_dim", t("FFN hidden size"), t("Hidden width M of the feed-forward network and of each expert.")},
             {"model.embedding_dim", t("Embedding size"),
              t("0: embed tokens straight into d_model. Otherwise factorised: vocab -> embedding_dim -> d_model "
                "(ALBERT, WideNet NLP), which saves parameters with a large vocabulary."),
              t("not factorised")},
             {"model.activation", t("Activation"), t("The FFN's and the experts' nonlinearity."), {}, 0.1, false,
              {{"gelu", "GELU"}, {"relu", "ReLU"}, {"silu", "SiLU"}}},
             {"model.dropout", t("Dropout"),
              t("Dropout on embeddings, attention probabilities and sublayer outputs (0 to 0.99)."), {}, 0.05},
             {"model.max_len", t("Longest input (max_len)"),
              t("Longest input sequence in tokens, not counting the CLS token; sets the position table.")},
             {"model.vocab_size", t("Vocabulary size"),
              t("Token vocabulary size; it must hold the tokenizer's vocabulary (bytes: 258).")},
         }},
        {t("Attention"),
         {
             {"model.attention", t("Mechanism"),
              t("How each head mixes the values (the Wide Attention paper's ten mechanisms): full softmax, kernel "
                "(linear, performer), low rank (linformer), windowed and sparse patterns (local, longformer, "
                "bigbird, sparse), learned sorting (sinkhorn) or synthesised weights (synthesizer); mixed shares "
                "each layer's heads among several. The mechanism's own settings appear below it."),
              {}, 0.1, false,
              {{"full", t("Full (softmax)")},
               {"linear", t("Linear (elu+1 kernel)")},
               {"performer", t("Performer (FAVOR+)")},
               {"linformer", t("Linformer (low rank)")},
               {"local", t("Local (blocks)")},
               {"longformer", t("Longformer (sliding window)")},
               {"bigbird", t("BigBird (window, global, random)")},
               {"sparse", t("Sparse Transformer (strided, fixed)")},
               {"sinkhorn", t("Sinkhorn (sorted blocks)")},
               {"synthesizer", t("Synthesizer (dense, random)")},
               {"mixed", t("Mixed (heads shared by several)")}}},
             {"model.attention_mix", t("Mixed heads"),
              t("Mixed attention: one mechanism per line; each layer's heads are shared equally among them in this "
                "order (the number of lines must divide the heads). The paper's mixed model: bigbird, linear, "
                "linformer, local, longformer, performer, sparse, synthesizer.")},
         }},
        {t("Head"),
         {
             {"model.head", t("Head"),
              t("Classification: one label per sequence. Language model: next-token logits at every position, "
                "with causal attention. Translation: an encoder-decoder; the blocks above are the encoder's, a "
                "decoder writes the target reading the encoder's output. Masked LM: the hidden tokens' logits, "
                "attention to both sides (BERT's and ALBERT's pretraining)."),
              {}, 0.1, false,
              {{"classification", t("Classification")},
               {"language_model", t("Language model")},
               {"translation", t("Translation (encoder-decoder)")},
               {"masked_lm", t("Masked language model")}}},
             {"model.decoder_layers", t("Decoder blocks"),
              t("Translation only: blocks of the decoder (causal self-attention, cross-attention to the source, "
                "FFN or experts).")},
             {"model.decoder_paths", t("Decoder paths"),
              t("Translation only: parallel paths in the decoder's sublayers; 1 gives plain sublayers, as the "
                "Multi-Path paper's systems, whose paths are in the encoder only.")},
             {"model.pooling", t("Pooling"),
              t("Classification only: read the sequence from a learned CLS token, or average the valid tokens."), {},
              0.1, false, {{"cls", t("CLS token")}, {"mean", t("Mean over tokens")}}},
             {"model.pooler", t("Pooler"),
              t("Classification only: a tanh dense layer d_model -> d_model on the pooled vector (BERT, ALBERT).")},
             {"model.num_classes", t("Classes"), t("Classification only: number of labels (ListOps: 10).")},
             {"model.segments", t("Segments"),
              t("Text pairs: a learned vector for the first text and one for the second, added to their tokens "
                "(BERT's segment embeddings). 2 for a pair task."),
              t("none")},
         }},
        {t("Experts"),
         {
             {"model.experts", t("Experts"),
              t("1: a dense FFN. More: a mixture of experts, each token routed to top_k of them.")},
             {"model.top_k", t("Experts per token (top-k)"),
              t("How many experts each token uses; at most the number of experts.")},
             {"model.capacity_factor", t("Capacity factor"),
              t("Training capacity C: each expert takes at most ceil(top_k x C x tokens / experts) tokens; the rest "
                "are dropped and the residual carries them. <= 0: never drop.")},
             {"model.eval_capacity_factor", t("Evaluation capacity"), t("Capacity factor C in evaluation. <= 0: never drop.")},
             {"model.balance_loss_weight", t("Balance loss weight"),
              t("Weight lambda of the load-balancing loss (WideNet Eq. 8) added to the task loss."), {}, 0.01, true},
             {"model.balance_count", t("Balance counts"),
              t("What the load-balancing loss counts as a token sent to an expert: its top-1 choice (Switch, V-MoE; "
                "balanced scores 1) or each of its top_k choices (WideNet Eq. 4 as printed; balanced scores top_k)."),
              {}, 0.1, false, {{"top1", t("Top-1 choice")}, {"topk", t("Every top-k choice")}}},
             {"model.router_z_loss_weight", t("Router z-loss weight"),
              t("Weight of the router z-loss (ST-MoE): the mean squared log-sum-exp of the router logits, added to the "
                "task loss to keep the logits small. 0: off; 0.001 is usual."), {}, 0.001, true},
             {"model.router_noise_std", t("Router noise"),
              t("Standard deviation of the Gaussian noise added to router logits while training."), {}, 0.05},
             {"model.routing_groups", t("Routing groups"),
              t("G groups of consecutive blocks; only a group's first block routes, the others reuse its routing.")},
             {"model.routing_priority", t("Routing priority"),
              t("Which tokens get an expert's slots first when it is full. Language models: position only."), {}, 0.1,
              false, {{"position", t("By position")}, {"batch", t("By top-1 probability (batch)")}}},
             {"model.renormalize_gates", t("Renormalise gates"),
              t("Scale the top-k combine weights to sum to 1 (needs top_k >= 2).")},
             {"model.share_router", t("Share the router"), t("One router for all blocks (WideNet) or one per block.")},
         }},
        {t("Paths"),
         {
             {"model.paths", t("Paths per sublayer"),
              t("n parallel paths in every attention and FFN sublayer (Multi-Path Transformer). Cannot be combined "
                "with experts.")},
             {"model.path_norm", t("PathNorm"), t("A LayerNorm at the end of every path.")},
             {"model.learnable_path_weights", t("Learnable path weights"),
              t("Train the weights alpha and beta of the paths' sum; otherwise they stay at their start (Path "
                "weight) and 1.")},
             {"model.path_weight", t("Path weight"),
              t("Each path's weight alpha for n paths, fixed or the learnable weights' start: 1/sqrt(2n) (the "
                "paper's start), 1/n (its Table 4's \"+ Multi-Path\"), 1/sqrt(n) (\"+ PathNorm\")."),
              {}, 0.1, false,
              {{"inverse_sqrt_2n", t("1/sqrt(2n)")}, {"inverse_n", t("1/n")}, {"inverse_sqrt_n", t("1/sqrt(n)")}}},
             {"model.path_extra_features", t("Extra path features"),
              t("n cheap extra features, each the mean of n-1 paths (needs paths >= 3).")},
         }},
        {t("Sharing across blocks"),
         {
             {"model.share_attention", t("Share attention"), t("One attention module used by every block (WideNet, ALBERT).")},
             {"model.share_ffn", t("Share FFN / MoE"),
              t("One FFN, or one mixture of experts, used by every block (WideNet, ALBERT).")},
             {"model.share_layernorm", t("Share LayerNorms"),
              t("One pair of LayerNorms (and path combiners) for every block. WideNet keeps them individual: that is "
                "what lets shared weights act differently in each block.")},
         }},
        {t("Task and data"),
         {
             {"task.kind", t("Task"),
              t("ListOps: nested list operations generated in-process (Long Range Arena rules). Classification: a "
                "TSV/CSV file of label, text. Language model: any text file. Image folder: a folder with one "
                "sub-folder of PNG/JPEG images per class. CIFAR-10: a folder with your copy of CIFAR-10's binary "
                "batches. Shapes: small pictures of shapes generated in-process (no download). Translation: pairs "
                "of texts, source TAB target (widelab-cli corpus bible writes the Bible's). Fashion-MNIST: 70,000 "
                "pictures of clothing, from Debian's dataset-fashion-mnist. Masked LM file: any text file, 15% of its "
                "tokens hidden for the model to restore (pretraining). The image tasks need image input; "
                "translation needs the translation head."),
              {}, 0.1, false,
              {{"listops", t("ListOps (generated)")},
               {"classification", t("Classification file")},
               {"language_model", t("Language model file")},
               {"image_folder", t("Image folder")},
               {"cifar10", t("CIFAR-10 (binary)")},
               {"shapes", t("Shapes (generated images)")},
               {"translation", t("Translation pairs")},
               {"fashion_mnist", t("Fashion-MNIST (Debian)")},
               {"masked_lm", t("Masked LM file (pretraining)")}}},
             {"task.path", t("Data file or folder"),
              t("The TSV/CSV (classification) or text (language model) file; the source TAB target lines, or the "
                "sources (translation); the folder of class sub-folders (image folder); the folder holding "
                "CIFAR-10's data_batch_*.bin and test_batch.bin; the folder of Fashion-MNIST's IDX files (empty: "
                "Debian's).")},
             {"task.target_path", t("Target file"),
              t("Translation: the target lines, line by line with the data file's sources. Empty: the data file "
                "holds source TAB target.")},
             {"task.max_subwords", t("Longest side"),
              t("Translation: pairs with a side longer than this many subword units are left out (the Multi-Path "
                "paper removes those over 250).")},
             {"task.tokenizer", t("Tokenizer"),
              t("How file texts become tokens. Bytes need vocab_size >= 258; BPE (byte-pair encoding) 260 + its "
                "merges."),
              {}, 0.1, false,
              {{"byte", t("Bytes")}, {"character", t("Characters")}, {"word", t("Words")}, {"bpe", t("BPE subwords")}}},
             {"task.vocab_limit", t("Vocabulary limit"),
              t("Character and word tokenizers: keep the most frequent tokens of the training split, plus padding "
                "and unknown.")},
             {"task.bpe_merges", t("BPE merges"),
              t("BPE tokenizer: merges learned from the training texts when the run starts, most frequent pair "
                "first; the vocabulary is 260 + merges ids (padding, unknown, start, end and the 256 bytes).")},
             {"task.sequence_length", t("Sequence length"), t("Longer texts are cut. 0: model.max_len."), t("= max_len")},
             {"task.validation_fraction", t("Validation fraction"),
              t("Share of the file held out for validation (deterministic from the data seed)."), {}, 0.01},
             {"task.test_fraction", t("Test fraction"), t("Share of the file held out for testing."), {}, 0.01},
             {"task.min_length", t("Shortest expression"), t("ListOps: shortest expression in tokens (LRA uses 500-2000).")},
             {"task.max_length", t("Longest expression"),
              t("ListOps: longest expression in tokens; at most the sequence length.")},
             {"task.train_size", t("Training examples"), t("ListOps examples in the training split.")},
             {"task.validation_size", t("Validation examples"), t("ListOps examples in the validation split.")},
             {"task.test_size", t("Test examples"), t("ListOps examples in the test split.")},
             {"task.seed", t("Data seed"), t("Seed of the ListOps generator and of the file splits.")},
             {"task.crop_padding", t("Random crop padding"),
              t("Images: while training, pad by this many pixels and cut a random crop of the image size. 0: no "
                "cropping."),
              t("no cropping")},
             {"task.flip", t("Random horizontal flip"), t("Images: while training, mirror half of the images.")},
             {"task.crop_scale", t("Inception crop, least area"),
              t("Images: while training, cut a random region of at least this share of the picture (aspect 3/4 to "
                "4/3) and resize it to the picture's size, before the padded crop and the flip. The Inception "
                "recipe, which WideNet follows, uses 0.08. 0: off."),
              t("off"), 0.05},
             {"task.randaugment", t("RandAugment operations"),
              t("Images: while training, this many operations per picture, each drawn from 14 (shears, "
                "translations, rotation, brightness, colour, contrast, sharpness, posterize, solarize, "
                "autocontrast, equalize, identity), after the crops and the flip. 0: off."),
              t("off")},
             {"task.randaugment_magnitude", t("RandAugment magnitude"),
              t("Images: how strong RandAugment's operations are, from 0 to 30 (30: shear 0.3, rotation 30 "
                "degrees, translation 45% of the side, brightness and the like by a factor 0.1 to 1.9).")},
             {"task.mixup", t("Mixup alpha"),
              t("Images: while training, mix each picture with another (and their labels) by a weight drawn from "
                "Beta(alpha, alpha); the larger share keeps its label for the accuracy. WideNet trains with 0.5. "
                "0: off."),
              t("off"), 0.1},
             {"task.skip_bad_inputs", t("Skip unreadable inputs"),
              t("Image folders: leave out, counted in the log, the images that cannot be decoded, rather than stop. "
                "Translation: likewise the lines without a tab or with an empty side.")},
         }},
        {t("Optimizer"),
         {
             {"train.optimizer", t("Optimizer"), t("AdamW, LAMB (the optimizer WideNet trains with) or SGD with momentum."),
              {}, 0.1, false, {{"adamw", "AdamW"}, {"lamb", t("LAMB (WideNet)")}, {"sgd", t("SGD with momentum")}}},
             {"train.learning_rate", t("Learning rate"),
              t("Peak learning rate, reached at the end of warmup. Accepts scientific notation (3e-4); the arrows "
                "step 1, 2, ... 9 within a decade."),
              {}, 0, true},
             {"train.weight_decay", t("Weight decay"),
              t("Decoupled weight decay on matrices only; biases, LayerNorms and path weights are not decayed."), {}, 0,
              true},
             {"train.beta1", t("Beta 1"), t("AdamW and LAMB: decay of the first-moment average."), {}, 0.01},
             {"train.beta2", t("Beta 2"), t("AdamW and LAMB: decay of the second-moment average."), {}, 0.001},
             {"train.epsilon", t("Epsilon"), t("AdamW and LAMB: added to the denominator for stability."), {}, 0, true},
             {"train.momentum", t("Momentum"), t("SGD only: momentum."), {}, 0.01},
             {"train.schedule", t("Schedule"),
              t("How the learning rate moves over training. Inverse square root: the Multi-Path Transformer; rsqrt: "
                "Long Range Arena."),
              {}, 0.1, false,
              {{"constant", t("Constant")},
               {"warmup_cosine", t("Warmup, then cosine")},
               {"inverse_sqrt", t("Warmup, then inverse square root")},
               {"warmup_rsqrt", t("Warmup, then rsqrt (LRA)")},
               {"warmup_linear", t("Warmup, then linear (BERT, ALBERT)")}}},
             {"train.warmup_steps", t("Warmup steps"),
              t("Linear warmup to the peak learning rate (ignored by the constant schedule).")},
             {"train.min_learning_rate_ratio", t("Final rate ratio"),
              t("Cosine and linear only: the rate at the last step as a fraction of the peak."), {}, 0.05},
         }},
        {t("Training"),
         {
             {"train.steps", t("Steps"), t("Optimizer steps in the whole run.")},
             {"train.batch_size", t("Batch size"), t("Sequences per step.")},
             {"train.batch_tokens", t("Batch tokens"),
              t("> 0: each training batch takes examples up to this many tokens (a translation pair counts its "
                "longer side) instead of the batch size; evaluation keeps the batch size."),
              t("by batch size")},
             {"train.gradient_clip", t("Gradient clipping"),
              t("Clip the global gradient norm to this value; <= 0 turns clipping off.")},
             {"train.label_smoothing", t("Label smoothing"),
              t("Spread this much of the target probability over the other classes."), {}, 0.05},
             {"train.device", t("Device"),
              t("Where training runs. Automatic: CUDA when this build has it and a GPU is present.")},
             {"train.bf16", t("bfloat16 autocast"),
              t("Autocast to bfloat16 on CUDA (the router stays in fp32). No effect on the CPU.")},
             {"train.cuda_graph", t("CUDA graphs"),
              t("CUDA: capture each training step once per batch shape and replay it, so that the GPU does not wait "
                "for the host to launch its kernels. Text batches are padded to a few lengths. The log says why "
                "when a run cannot (the CPU, several processes, an optimiser other than AdamW).")},
             {"train.threads", t("CPU threads"), t("Intra-op threads; 0: every core."), t("every core")},
             {"train.processes", t("Processes"),
              t("Processes that share each batch, on this machine (distributed training over Gloo): each trains "
                "on its part of every batch and the gradients are summed. The curves are one process's."),
              {}, 1},
             {"train.expert_parallel", t("Split experts"),
              t("Distributed runs: each process holds an equal share of every mixture layer's experts, and tokens "
                "travel to their expert and back, instead of every process holding them all. The number of "
                "processes must divide the experts.")},
             {"train.seed", t("Seed"), t("Seed of the initialisation, dropout, router noise and batch order.")},
             {"train.init_from", t("Start from run"),
              t("Fine-tuning: start from another run's weights instead of the seed's. A run folder (its latest "
                "checkpoint), or RUN:STEP, RUN:best. Its body must match this model; a head for another task starts "
                "anew, and text is read with that run's tokenizer. The log says what was loaded.")},
         }},
        {t("Logging, evaluation and checkpoints"),
         {
             {"train.log_every", t("Log every"), t("Steps between snapshots to the views and lines of metrics.jsonl.")},
             {"train.eval_every", t("Evaluate every"), t("Steps between validation passes.")},
             {"train.eval_batches", t("Evaluation batches"),
              t("Validation batches per evaluation; 0: the whole validation split."), t("whole split")},
             {"train.select_best", t("Best checkpoint by"),
              t("Which validation makes checkpoints/best.pt, the model studies test: the lowest loss, or the highest "
                "accuracy (the Wide Attention paper's rule)."),
              {}, 0.1, false, {{"loss", t("Lowest loss")}, {"accuracy", t("Highest accuracy")}}},
             {"train.bleu_sentences", t("BLEU sentences"),
              t("Translation: validation sentences translated (greedily) for BLEU and chrF at each evaluation."),
              t("no BLEU")},
             {"train.checkpoint_every", t("Checkpoint every"), t("Steps between checkpoints.")},
             {"train.keep_last", t("Checkpoints kept"), t("Older checkpoints are deleted.")},
             {"train.probe_every", t("Probe every"),
              t("Steps between inspections of the probe texts (attention, routing, prediction); 0: with every "
                "validation."),
              t("with validation")},
             {"train.alarm_expert_share", t("Collapse alarm above"),
              t("Warn in the log and the Experts page when one expert takes more than this share of a block's tokens."),
              {}, 0.05},
             {"train.collective_timeout_s", t("Distributed timeout"),
              t("Seconds a process of a distributed run waits for the others before it stops with an error naming "
                "the one that did not answer."),
              {}, 10},
             {"train.probes", t("Probe texts"),
              t("Texts inspected during training, one per line: their attention maps, expert routing and prediction. "
                "Empty: a short validation example. Texts added in the Attention view join them. Images: "
                "validation:N (the N-th validation example) or the path of a PNG or JPEG file.")},
         }},
    };
}

}  // namespace

const QList<FieldGroup>& configPanelLayout()
{
    static const QList<FieldGroup> layout = makeLayout();
    return layout;
}

const KeyFamily& attentionFamily()
{
    static const KeyFamily family{QStringLiteral("model.attention"), QStringLiteral("model.attention_mix"),
                                  QStringLiteral("mixed")};
    return family;
}

QString familyChoiceOf(const QString& key, const QStringList& choices)
{
    const int dot = static_cast<int>(key.indexOf(QLatin1Char('.')));
    const QString name = key.mid(dot + 1);
    for (const QString& choice : choices)
        if (name.startsWith(choice + QLatin1Char('_')))
            return choice;
    return {};
}

bool familyChoiceInUse(const QString& choice, const std::function<QJsonValue(const QString& key)>& value)
{
    const KeyFamily& family = attentionFamily();
    const QString chosen = value(family.key).toString();
    if (chosen == choice)
        return true;
    if (chosen != family.mixedChoice)
        return false;
    const QJsonValue mix = value(family.mixKey);
    const QStringList entries = mix.isArray() ? mix.toVariant().toStringList()
                                              : mix.toString().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    for (const QString& entry : entries)
        if (entry.trimmed() == choice)
            return true;
    return false;
}

FieldState fieldState(const QString& key, const std::function<QJsonValue(const QString& key)>& value)
{
    const KeyState state = keyState(key.toStdString(), [&value](const std::string& other) {
        return toJson(value(QString::fromStdString(other)));
    });
    return {state.visible, state.applicable, QString::fromStdString(state.reason)};
}

PathChoice pathChoice(const QString& key, const std::function<QJsonValue(const QString& key)>& value)
{
    PathChoice choice;
    choice.title = t("Choose the data file");
    choice.filter = t("Text and tables (*.txt *.tsv *.csv *.text);;All files (*)");
    if (key != QLatin1String("task.path"))
        return choice;
    const QString kind = value(QStringLiteral("task.kind")).toString();
    if (kind == QLatin1String("image_folder")) {
        choice.folder = true;
        choice.title = t("Choose the image folder (one sub-folder per class)");
    } else if (kind == QLatin1String("cifar10")) {
        choice.folder = true;
        choice.title = t("Choose the folder holding CIFAR-10's binary batches");
    } else if (kind == QLatin1String("fashion_mnist")) {
        choice.folder = true;
        choice.title = t("Choose the folder holding Fashion-MNIST's IDX files");
    }
    return choice;
}

}  // namespace widelab
