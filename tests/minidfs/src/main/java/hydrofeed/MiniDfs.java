package hydrofeed;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.MiniDFSNNTopology;
import org.apache.hadoop.minikdc.MiniKdc;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.UserGroupInformation;

/**
 * A real Hadoop MiniDFSCluster for hydrofeed's tests, plus a few client commands that use
 * Hadoop's own {@link FileSystem} (an independent writer for the files our reader checks).
 *
 * <pre>
 *   MiniDfs WORKDIR [FLAG...]            start the cluster (see {@link #serve}); on stdin it
 *                                        takes "stop-datanode", "restart-datanodes",
 *                                        "put LOCAL PATH", "token FILE RENEWER", "failover"
 *                                        (answers "ok ..." or "error ...") and stops on EOF or
 *                                        any other line. FLAGs: security (a KDC, Kerberos
 *                                        RPC), integrity | privacy (hadoop.rpc.protection and
 *                                        dfs.data.transfer.protection), encrypt-data-transfer,
 *                                        ha (two NameNodes, nameservice minidfs-ns)
 *   MiniDfs put LOCAL PATH [OCTAL_PERM]  copy a local file into HDFS (parents created)
 *   MiniDfs ls PATH                      one line per child: "len\tisdir\tpath"
 *   MiniDfs chmod OCTAL_PERM PATH        set permissions
 * </pre>
 *
 * Client commands talk to hdfs://127.0.0.1:9000 (or $HYDROFEED_HDFS_URL).
 */
public final class MiniDfs {
    private static final String URL = "hdfs://127.0.0.1:9000";
    private static final String NAMESERVICE = "minidfs-ns";
    private static final Set<String> KNOWN_FLAGS = new HashSet<>(Arrays.asList(
        "security", "integrity", "privacy", "encrypt-data-transfer", "ha"));

    public static void main(String[] args) throws Exception {
        if (args.length > 0) {
            switch (args[0]) {
                case "put": put(args); return;
                case "ls": ls(args); return;
                case "chmod": chmod(args); return;
                default: break;
            }
        }
        Set<String> flags = new HashSet<>(Arrays.asList(args).subList(Math.min(1, args.length), args.length));
        for (String f : flags) {
            if (!KNOWN_FLAGS.contains(f)) {
                throw new IllegalArgumentException("unknown flag " + f + " (known: " + KNOWN_FLAGS + ")");
            }
        }
        serve(new File(args.length > 0 ? args[0] : "target/minidfs"), flags);
    }

    /**
     * Starts a MiniDFSCluster (three DataNodes, 1 MiB blocks so that small test files span
     * several blocks), writes the client configuration to {@code <workdir>/core-site.xml},
     * prints "Ready!" and runs until stdin closes or gets a line it does not know.
     * Hadoop's own logs go to stderr (log4j.properties), so stdout carries only "Ready!" and
     * the answers to commands.
     *
     * <ul>
     * <li>Plain: one NameNode at RPC 9000, HTTP 9870 (with any flag: ephemeral ports).
     * <li>{@code security}: a MiniKdc (realm in {@code <workdir>/krb5.conf}); the cluster runs
     *     as {@code hdfs/localhost} ({@code hdfs.keytab}); users {@code alice} and {@code bob}
     *     get keytabs {@code alice.keytab}, {@code bob.keytab}. RPC and data transfer
     *     protection are {@code authentication}, or {@code integrity} / {@code privacy} with
     *     those flags; {@code encrypt-data-transfer} sets {@code dfs.encrypt.data.transfer}.
     * <li>{@code ha}: two NameNodes (nameservice {@code minidfs-ns}, ephemeral ports), nn0
     *     active; "failover" makes the other one active.
     * </ul>
     * Every cluster's conf also mounts {@code viewfs://minidfs-viewfs/mnt} on its root.
     */
    static void serve(File work, Set<String> flags) throws Exception {
        work.mkdirs();
        // A cluster never outlives its test run: halt after HYDROFEED_MINIDFS_MAX_SECS (default
        // one hour) whatever happens, so a wedged parent cannot leave it running.
        long maxSecs = Long.parseLong(System.getenv().getOrDefault("HYDROFEED_MINIDFS_MAX_SECS", "3600"));
        watchdog(maxSecs, "lifetime limit");
        Configuration conf = new Configuration();
        conf.set("dfs.blocksize", "1048576");
        conf.set("dfs.namenode.fs-limits.min-block-size", "65536");
        conf.set("hdfs.minidfs.basedir", new File(work, "data").getAbsolutePath());
        MiniKdc kdc = flags.contains("security") ? secure(work, conf, flags) : null;
        boolean ha = flags.contains("ha");
        if (ha) {
            conf.set("dfs.client.failover.proxy.provider." + NAMESERVICE,
                "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider");
            conf.set("dfs.ha.tail-edits.period", "1s");
        }
        HdfsConfiguration hdfsConf = new HdfsConfiguration(conf);
        MiniDFSCluster.Builder builder = new MiniDFSCluster.Builder(hdfsConf).numDataNodes(3);
        if (ha) {
            builder.nnTopology(MiniDFSNNTopology.simpleHATopology());
        } else if (flags.isEmpty()) {
            // The plain cluster has fixed ports (callers take turns through a lock); the
            // others have ephemeral ones (their URL is fs.defaultFS in core-site.xml).
            builder.nameNodePort(9000).nameNodeHttpPort(9870);
        }
        MiniDFSCluster dfs = builder.build();
        if (ha) {
            dfs.transitionToActive(0);
        }
        dfs.waitActive();
        String url = ha ? "hdfs://" + NAMESERVICE : "hdfs://127.0.0.1:" + dfs.getNameNodePort();
        hdfsConf.set("fs.defaultFS", url);
        hdfsConf.set("fs.viewfs.mounttable.minidfs-viewfs.link./mnt", url + "/");
        hdfsConf.set("fs.viewfs.mounttable.minidfs-viewfs.linkFallback", url + "/");
        File tmp = new File(work, "core-site.xml.tmp");
        try (FileOutputStream out = new FileOutputStream(tmp)) {
            hdfsConf.writeXml(out);
        }
        if (!tmp.renameTo(new File(work, "core-site.xml"))) {
            throw new IllegalStateException("cannot rename " + tmp);
        }
        FileSystem fs = FileSystem.get(new URI(url), hdfsConf);
        int[] active = {0};
        System.out.println("Ready!");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        java.util.List<MiniDFSCluster.DataNodeProperties> stopped = new java.util.ArrayList<>();
        String line;
        // Commands, answered with "ok <command>" or "error <why>"; EOF or any other line ends
        // the cluster (EOF covers a parent killed with SIGKILL).
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split("\\s+");
            try {
                if (cmd[0].equals("stop-datanode")) {
                    // Stops the first running DataNode.
                    stopped.add(dfs.stopDataNode(0));
                } else if (cmd[0].equals("restart-datanodes")) {
                    for (MiniDFSCluster.DataNodeProperties p : stopped) {
                        // On new ports: the old ones may have been taken meanwhile (a client's
                        // ephemeral port; "BindException: Address already in use"). Clients
                        // learn the new addresses from the NameNode's block locations.
                        dfs.restartDataNode(p, false);
                    }
                    stopped.clear();
                    dfs.waitActive();
                    dfs.waitFirstBRCompleted(active[0], 60000);
                } else if (cmd[0].equals("put") && cmd.length == 3) {
                    // As the cluster's own user (the superuser; hdfs/localhost when secure),
                    // readable by everyone.
                    Path dst = new Path(cmd[2]);
                    fs.mkdirs(dst.getParent(), new FsPermission((short) 0755));
                    fs.copyFromLocalFile(false, true, new Path(new File(cmd[1]).getAbsolutePath()), dst);
                    fs.setPermission(dst, new FsPermission((short) 0644));
                } else if (cmd[0].equals("token") && cmd.length == 3) {
                    // HDFS delegation tokens for the cluster's user, as a Spark driver gets
                    // them, in the token file format YARN gives containers.
                    Credentials creds = new Credentials();
                    fs.addDelegationTokens(cmd[2], creds);
                    creds.writeTokenStorageFile(new Path(new File(cmd[1]).toURI()), hdfsConf);
                } else if (cmd[0].equals("failover") && ha) {
                    int next = 1 - active[0];
                    dfs.transitionToStandby(active[0]);
                    dfs.transitionToActive(next);
                    active[0] = next;
                } else {
                    break;
                }
                System.out.println("ok " + line.trim());
            } catch (Exception e) {
                System.out.println("error " + e.toString().replace('\n', ' '));
            }
            System.out.flush();
        }
        watchdog(60, "shutdown took too long");
        fs.close();
        dfs.shutdown(true);
        if (kdc != null) {
            kdc.stop();
        }
        new File(work, "core-site.xml").delete();
        work.delete(); // only if empty: the caller owns anything else in it
        System.exit(0);
    }

    /**
     * Starts a KDC, makes the principals and keytabs, sets the cluster's security keys in
     * {@code conf} and logs this JVM in as the cluster's user.
     */
    private static MiniKdc secure(File work, Configuration conf, Set<String> flags) throws Exception {
        File kdcDir = new File(work, "kdc");
        kdcDir.mkdirs();
        MiniKdc kdc = new MiniKdc(MiniKdc.createConf(), kdcDir);
        kdc.start();
        String realm = kdc.getRealm();
        File keytab = new File(work, "hdfs.keytab");
        kdc.createPrincipal(keytab, "hdfs/localhost", "HTTP/localhost");
        kdc.createPrincipal(new File(work, "alice.keytab"), "alice");
        kdc.createPrincipal(new File(work, "bob.keytab"), "bob");
        Files.copy(kdc.getKrb5conf().toPath(), new File(work, "krb5.conf").toPath(),
            StandardCopyOption.REPLACE_EXISTING);
        String protection = flags.contains("privacy") ? "privacy"
            : flags.contains("integrity") ? "integrity" : "authentication";
        conf.set("hadoop.security.authentication", "kerberos");
        conf.set("hadoop.security.authorization", "true");
        conf.set("hadoop.rpc.protection", protection);
        conf.set("dfs.data.transfer.protection", protection);
        if (flags.contains("encrypt-data-transfer")) {
            conf.set("dfs.encrypt.data.transfer", "true");
        }
        String principal = "hdfs/localhost@" + realm;
        conf.set("dfs.namenode.keytab.file", keytab.getAbsolutePath());
        conf.set("dfs.namenode.kerberos.principal", principal);
        conf.set("dfs.datanode.keytab.file", keytab.getAbsolutePath());
        conf.set("dfs.datanode.kerberos.principal", principal);
        conf.set("dfs.web.authentication.kerberos.principal", "HTTP/localhost@" + realm);
        conf.set("dfs.web.authentication.kerberos.keytab", keytab.getAbsolutePath());
        conf.set("dfs.block.access.token.enable", "true");
        conf.set("ignore.secure.ports.for.testing", "true");
        UserGroupInformation.setConfiguration(conf);
        UserGroupInformation.loginUserFromKeytab(principal, keytab.getAbsolutePath());
        return kdc;
    }

    private static void watchdog(long secs, String why) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(secs * 1000);
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("MiniDfs: " + why + ", halting");
            Runtime.getRuntime().halt(3);
        }, "minidfs-watchdog");
        t.setDaemon(true);
        t.start();
    }

    private static FileSystem client() throws Exception {
        String url = System.getenv().getOrDefault("HYDROFEED_HDFS_URL", URL);
        Configuration conf = new HdfsConfiguration();
        // The cluster's 1 MiB blocks (a client picks the block size of the files it writes).
        conf.set("dfs.blocksize", "1048576");
        return FileSystem.get(new URI(url), conf);
    }

    private static void put(String[] args) throws Exception {
        if (args.length < 3) {
            throw new IllegalArgumentException("usage: put LOCAL PATH [OCTAL_PERM]");
        }
        try (FileSystem fs = client()) {
            Path dst = new Path(args[2]);
            fs.mkdirs(dst.getParent());
            fs.copyFromLocalFile(false, true, new Path(new File(args[1]).getAbsolutePath()), dst);
            if (args.length > 3) {
                fs.setPermission(dst, new FsPermission(Short.parseShort(args[3], 8)));
            }
        }
    }

    private static void ls(String[] args) throws Exception {
        try (FileSystem fs = client()) {
            for (FileStatus st : fs.listStatus(new Path(args[1]))) {
                System.out.println(st.getLen() + "\t" + st.isDirectory() + "\t" + st.getPath());
            }
        }
    }

    private static void chmod(String[] args) throws Exception {
        try (FileSystem fs = client()) {
            fs.setPermission(new Path(args[2]), new FsPermission(Short.parseShort(args[1], 8)));
        }
    }
}
