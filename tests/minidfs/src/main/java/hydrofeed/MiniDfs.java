package hydrofeed;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.net.URI;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * A real Hadoop MiniDFSCluster for hydrofeed's tests, plus a few client commands that use
 * Hadoop's own {@link FileSystem} (an independent writer for the files our reader checks).
 *
 * <pre>
 *   MiniDfs WORKDIR                      start the cluster (see {@link #serve}); on stdin it
 *                                        takes "stop-datanode", "restart-datanodes" (fault
 *                                        tests; answers "ok ..." or "error ...") and stops on
 *                                        EOF or any other line
 *   MiniDfs put LOCAL PATH [OCTAL_PERM]  copy a local file into HDFS (parents created)
 *   MiniDfs ls PATH                      one line per child: "len\tisdir\tpath"
 *   MiniDfs chmod OCTAL_PERM PATH        set permissions
 * </pre>
 *
 * Client commands talk to hdfs://127.0.0.1:9000 (or $HYDROFEED_HDFS_URL).
 */
public final class MiniDfs {
    private static final String URL = "hdfs://127.0.0.1:9000";

    public static void main(String[] args) throws Exception {
        if (args.length > 0) {
            switch (args[0]) {
                case "put": put(args); return;
                case "ls": ls(args); return;
                case "chmod": chmod(args); return;
                default: break;
            }
        }
        serve(new File(args.length > 0 ? args[0] : "target/minidfs"));
    }

    /**
     * Starts a MiniDFSCluster (NameNode RPC 9000, HTTP 9870, three DataNodes, 1 MiB blocks so
     * that small test files span several blocks), writes the client configuration to
     * {@code <workdir>/core-site.xml}, prints "Ready!" and runs until stdin closes or gets a line.
     * Hadoop's own logs go to stderr (log4j.properties), so stdout carries only "Ready!".
     */
    static void serve(File work) throws Exception {
        work.mkdirs();
        // A cluster never outlives its test run: halt after HYDROFEED_MINIDFS_MAX_SECS (default
        // one hour) whatever happens, so a wedged parent cannot leave it running.
        long maxSecs = Long.parseLong(System.getenv().getOrDefault("HYDROFEED_MINIDFS_MAX_SECS", "3600"));
        watchdog(maxSecs, "lifetime limit");
        Configuration conf = new Configuration();
        conf.set("dfs.blocksize", "1048576");
        conf.set("dfs.namenode.fs-limits.min-block-size", "65536");
        conf.set("hdfs.minidfs.basedir", new File(work, "data").getAbsolutePath());
        HdfsConfiguration hdfsConf = new HdfsConfiguration(conf);
        MiniDFSCluster dfs = new MiniDFSCluster.Builder(hdfsConf)
            .nameNodePort(9000)
            .nameNodeHttpPort(9870)
            .numDataNodes(3)
            .build();
        dfs.waitActive();
        hdfsConf.set("fs.defaultFS", URL);
        File tmp = new File(work, "core-site.xml.tmp");
        try (FileOutputStream out = new FileOutputStream(tmp)) {
            hdfsConf.writeXml(out);
        }
        if (!tmp.renameTo(new File(work, "core-site.xml"))) {
            throw new IllegalStateException("cannot rename " + tmp);
        }
        System.out.println("Ready!");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        java.util.List<MiniDFSCluster.DataNodeProperties> stopped = new java.util.ArrayList<>();
        String line;
        // Commands for fault tests, answered with "ok <command>" or "error <why>"; EOF or any
        // other line ends the cluster (EOF covers a parent killed with SIGKILL).
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split("\\s+");
            try {
                if (cmd[0].equals("stop-datanode")) {
                    // Stops the first running DataNode.
                    stopped.add(dfs.stopDataNode(0));
                } else if (cmd[0].equals("restart-datanodes")) {
                    for (MiniDFSCluster.DataNodeProperties p : stopped) {
                        dfs.restartDataNode(p, true);
                    }
                    stopped.clear();
                    dfs.waitActive();
                    dfs.waitFirstBRCompleted(0, 60000);
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
        dfs.shutdown(true);
        new File(work, "core-site.xml").delete();
        work.delete(); // only if empty: the caller owns anything else in it
        System.exit(0);
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
